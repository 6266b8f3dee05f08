"""Audit of the quizzes of chapters 5, 6, 7 and 9: every numeric answer, and
every number or behaviour an option states, recomputed independently (plain
Python, numpy's float16, or lib where the claim is about lib itself).

Chapter 8's quiz is audited with its numbers in test_chapter_08_numbers.py.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
from naive import softmax
from quiz_files import accepts, explains_as_a_mistake, question_starting, quiz, right_option

from sdpa_course import lib

CH5, CH6, CH7, CH9 = (
    "05_why_divide_by_sqrt_dk",
    "06_causal_masking",
    "07_multi_head_preview",
    "09_a_head_that_learns",
)


def bottom_right_keys(i: int, n_q: int, n_k: int) -> int:
    """Keys query i may read when the causal mask is aligned at the bottom right."""
    return sum(1 for j in range(n_k) if j <= i + (n_k - n_q))


def finite_difference_ratio() -> float:
    """By how much ``dS K`` (the scale forgotten) exceeds lib's dQ at d_k = 16."""
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal(s) for s in ((3, 16), (5, 16), (5, 4), (3, 4)))
    _, weights = lib.scaled_dot_product_attention(q, k, v, return_weights=True)
    d_scores = lib.softmax_backward(weights, g @ v.T)  # dL/dS for S = Q K^T / sqrt(d_k)
    dq, _, _ = lib.attention_backward(q, k, v, g)
    ratio = (d_scores @ k) / dq
    assert np.allclose(ratio, ratio.flat[0])
    return float(ratio.flat[0])


# (quiz file, start of the question, independent value)
NUMERIC = [
    (CH5, "The components of q and k are independent", math.sqrt(64 * 1 * 1)),
    (CH5, "Under the same assumptions, with d_k = 512", 512 / math.sqrt(512) ** 2),
    (CH5, "After training, the components", 64 * 4 * 4 / 64),
    (CH5, "The softmax Jacobian is J", 0.5 * (0 - 0.5)),
    (CH5, "A Monte Carlo check uses N = 100 000", 0.05 / math.sqrt(8 / 100_000)),
    (CH6, "A causal self-attention runs over", sum(1 for i in range(6) for j in range(6) if j > i)),
    (CH6, "Positions are numbered from 0. With the causal mask", sum(1 for j in range(6) if j <= 3)),
    (CH6, "A decoder with a KV cache holds", bottom_right_keys(0, n_q=2, n_k=5)),
    (CH7, "The paper uses d_model = 512", 512 / 8),
    (CH7, "With h = 8 heads of width d_v = 64", (8 * 64) * 512),
    (CH7, "In cross-attention, 3 decoder tokens", 3 * 6),
    (CH7, "GPT-3's largest model has", 12288 / 96),
    (CH9, "The sinusoidal encoding gives", 1 / 10000 ** (2 * 2 / 8)),
    (CH9, "One query has weights", float(lib.softmax_backward(np.array([0.5, 0.5]), np.array([1.0, 0.0]))[0])),
    (CH9, "The scores are $S = Q K^\\top / \\sqrt{d_k}$", finite_difference_ratio()),
]


@pytest.mark.parametrize("name, start, value", NUMERIC, ids=[f"{n[:2]}: {s[:40]}" for n, s, _ in NUMERIC])
def test_numeric_answer_is_the_independent_value(name, start, value):
    question = question_starting(name, start)
    assert accepts(question, value), f"{name}: the quiz does not accept the independent value {value}"


def test_every_numeric_question_of_chapters_5_to_9_is_audited():
    for name in (CH5, CH6, CH7, CH9):
        for q in quiz(name):
            if q["type"] == "numeric":
                assert any(n == name and q["question"].startswith(s) for n, s, _ in NUMERIC), (
                    f"{name}: numeric question not audited: {q['question'][:60]!r}"
                )


def test_ch6_bottom_right_and_top_left_alignments_differ():
    """The KV-cache question's wrong answer 1 is the top-left alignment (lib's)."""
    top_left = lib.causal_mask(2, 5)
    assert int(top_left[0].sum()) == 1 and bottom_right_keys(0, 2, 5) == 4 and bottom_right_keys(1, 2, 5) == 5


# --------------------------------------------------------------------------- chapter 5's options


def test_ch5_wrong_scale_sqrt_d_model_squeezes_the_scores_to_about_0_35():
    d_k, d_model = 128, 1024
    std = math.sqrt(d_k) / math.sqrt(d_model)
    assert f"{std:.2f}" == "0.35" and f"{math.sqrt(d_k):.1f}" == "11.3" and math.sqrt(d_model) == 32
    assert f"{math.sqrt(d_model / d_k):.1f}" == "2.8" and d_k / d_model == 0.125
    assert f"{math.sqrt(d_k / d_model):.2f}" == "0.35"
    # and by simulation: components of variance 1, scores divided by sqrt(d_model)
    rng = np.random.default_rng(5)
    q, k = rng.standard_normal((2, 20_000, d_k))
    scaled = lib.scaled_scores(q[:, None, :], k[:, None, :], scale=1 / math.sqrt(d_model))
    assert scaled.std() == pytest.approx(std, rel=0.03)
    right = right_option(CH5, "A head has d_k = 128")
    assert right["answer"].startswith("About 0.35")


def test_ch5_unscaled_scores_stay_far_below_where_exp_overflows():
    assert round(math.sqrt(512)) == 23 and int(math.log(sys.float_info.max)) == 709
    text = json.dumps(quiz(CH5), ensure_ascii=False)
    assert "about 23 at d_k = 512" in text and "about 709" in text


# --------------------------------------------------------------------------- chapter 6's options


def test_ch6_float16_casts_and_sums():
    with np.errstate(over="ignore"):
        assert np.float16(-1e9) == -np.inf
        fill = np.float16(-65504)
        assert np.finfo(np.float16).min == fill
        assert np.float16(-15) + fill == fill and np.float16(-1) + fill == fill
        assert np.float16(-20) + fill == -np.inf and fill + fill == -np.inf
        assert np.float16(-16) + fill == -np.inf
    options = {a["answer"]: a["correct"] for a in question_starting(CH6, "In float16 the most negative")["answers"]}
    assert [options[o] for o in ("-15 + (-65504)", "-1 + (-65504)", "-20 + (-65504)")] == [False, False, True]


def test_ch6_changing_x4_changes_only_o4_and_later_under_the_causal_mask():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 4))
    y = x.copy()
    y[4] += 1.0
    before = lib.scaled_dot_product_attention(x, x, x, is_causal=True)
    after = lib.scaled_dot_product_attention(y, y, y, is_causal=True)
    changed = [i for i in range(7) if not np.array_equal(before[i], after[i])]
    assert changed == [4, 5, 6]
    assert right_option(CH6, "With the causal mask, you change")["answer"].startswith("Only o_4 and the outputs after")


def test_ch6_the_example_weights_without_a_mask_are_fairly_even():
    _, x = lib.example_sentence()
    w = lib.example_projections()
    q, k = x @ w["w_q"], x @ w["w_k"]
    weights = np.array([softmax(list(row)) for row in (q @ k.T / math.sqrt(q.shape[-1]))])
    assert weights.max() < 0.5 and weights.min() > 0 and not np.allclose(weights, 1 / 6)
    assert np.abs(q @ k.T / math.sqrt(q.shape[-1])).max() < 1  # its feedback: "every scaled score ... smaller than 1"
    assert right_option(CH6, "Chapter 6 uses the projections")["answer"].startswith("Fairly even")


# --------------------------------------------------------------------------- chapter 7's options


def test_ch7_cross_attention_weights_shape_from_lib():
    rng = np.random.default_rng(3)
    x, x_kv = rng.standard_normal((2, 6, 512)), rng.standard_normal((2, 10, 512))
    w_q, w_k, w_v, w_o = (rng.standard_normal((512, 512)) / 512**0.5 for _ in range(4))
    _, weights = lib.multi_head_attention(x, w_q, w_k, w_v, w_o, 8, x_kv=x_kv, return_weights=True)
    assert weights.shape == (2, 8, 6, 10)
    assert right_option(CH7, "x has shape (2, 6, 512)")["answer"] == "(2, 8, 6, 10)"


def test_ch7_left_padding_and_causal_mask_leave_query_0_nothing_and_lib_returns_zeros():
    padding = np.array([False, True, True, True])  # key 0 is padding
    mask = lib.causal_mask(4) & padding[None, :]
    assert not mask[0].any() and mask[1:].any(axis=1).all()
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((3, 4, 8))
    out, weights = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    assert np.all(weights[0] == 0) and np.all(out[0] == 0) and np.isfinite(out).all()
    assert right_option(CH7, "A sequence of 4 tokens is padded")["answer"] == "Zero weights and a zero output"


def test_ch7_dividing_by_d_k_leaves_a_variance_of_1_over_d_k():
    d_k = 64
    rng = np.random.default_rng(6)
    q, k = rng.standard_normal((2, 40_000, d_k))
    scores = np.einsum("nd,nd->n", q, k)
    assert (scores / d_k).var() == pytest.approx(1 / d_k, rel=0.05)
    assert (scores / math.sqrt(d_k)).var() == pytest.approx(1, rel=0.05)


# --------------------------------------------------------------------------- chapter 9's options


def test_ch9_float32_holds_1e_minus_6_but_rounds_a_loss_to_about_1e_minus_7_of_itself():
    tiny, eps = np.finfo(np.float32).tiny, np.finfo(np.float32).eps
    assert f"{tiny:.0e}" == "1e-38" and np.float32(1e-6) != 0
    assert f"{eps:.1e}" == "1.2e-07"
    text = json.dumps(quiz(CH9), ensure_ascii=False)
    assert "about $10^{-38}$" in text and "1.2 \\\\times 10^{-7}" in text


# --------------------------------------------------------------------------- the numeric questions' named mistakes

# (quiz file, start of the question, the value a named mistake gives): each must
# be caught by a wrong answer, whose feedback explains that mistake.
MISTAKES = [
    (CH5, "The components of q and k are independent", 64),  # the variance, not its square root
    (CH5, "The components of q and k are independent", 64 / 64),  # the scaled score's spread
    (CH5, "Under the same assumptions, with d_k = 512", 512),  # the unscaled variance
    (CH5, "Under the same assumptions, with d_k = 512", math.sqrt(512)),  # the unscaled standard deviation
    (CH5, "After training, the components", 1),  # the initialization's variance
    (CH5, "After training, the components", 4),  # one factor of 4 only
    (CH5, "The softmax Jacobian is J", 0.5 * (1 - 0.5)),  # the diagonal entry
    (CH5, "A Monte Carlo check uses N = 100 000", 0.05 / math.sqrt(8 / 20_000)),  # N = 20 000
    (CH6, "A causal self-attention runs over", sum(1 for i in range(6) for j in range(6) if j <= i)),
    (CH6, "A causal self-attention runs over", 36 - 6),  # all but the diagonal
    (CH6, "Positions are numbered from 0. With the causal mask", sum(1 for j in range(6) if j < 3)),
    (CH6, "A decoder with a KV cache holds", int(lib.causal_mask(2, 5)[0].sum())),  # top left
    (CH6, "A decoder with a KV cache holds", bottom_right_keys(1, n_q=2, n_k=5)),  # the last query
    (CH7, "The paper uses d_model = 512", 512),
    (CH7, "The paper uses d_model = 512", 512 * 8),
    (CH7, "With h = 8 heads of width d_v = 64", 64 * 512),  # one head's block
    (CH7, "In cross-attention, 3 decoder tokens", 3 * 3),
    (CH7, "In cross-attention, 3 decoder tokens", 6 * 6),
    (CH7, "GPT-3's largest model has", 12288),
    (CH9, "The sinusoidal encoding gives", 10000 ** (2 * 2 / 8)),  # the divisor, not the frequency
    (CH9, "One query has weights", 0.5 * 1),  # a_0 da_0 without the row-sum term
    (CH9, "The scores are $S = Q K^\\top / \\sqrt{d_k}$", 16),  # d_k for sqrt(d_k)
]


@pytest.mark.parametrize("name, start, value", MISTAKES, ids=[f"{n[:2]}: {s[:30]} {v:g}" for n, s, v in MISTAKES])
def test_a_named_mistake_gets_its_own_feedback(name, start, value):
    question = question_starting(name, start)
    assert not accepts(question, value) and explains_as_a_mistake(question, value), (
        f"{name}: no wrong answer of {start!r} catches {value}"
    )
