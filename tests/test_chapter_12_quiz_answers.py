"""Audit of chapter 12's quiz: every numeric answer and every named mistake
recomputed independently (plain Python), and the options that state a
behaviour checked with lib where the claim is about lib itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from quiz_files import accepts, explains_as_a_mistake, question_starting, quiz, right_option

from sdpa_course import lib

CH12 = "12_attention_as_models_run_it"


def cache_kib(layers, heads, d_k, size):
    return 2 * layers * heads * d_k * size / 1024


# (start of the question, independent value)
NUMERIC = [
    ("A decoder has 12 layers of 12 heads", cache_kib(12, 12, 64, 4)),
    ("A model has $h = 64$ query heads", 64 / 8),
    ("Sliding-window attention with a window of $w = 4$", 3 * (4 - 1)),
    ("Rotary embeddings with $d_k = 8$", 5 * 10000 ** (-2 * 1 / 8)),
]

# (start of the question, the value a named mistake gives)
MISTAKES = [
    ("A decoder has 12 layers of 12 heads", cache_kib(12, 12, 64, 4) / 2),  # keys or values alone
    ("A decoder has 12 layers of 12 heads", 2 * 12 * 12 * 64 / 1024),  # numbers, not bytes
    ("A decoder has 12 layers of 12 heads", cache_kib(1, 12, 64, 4)),  # one layer
    ("A model has $h = 64$ query heads", 64),  # the query heads
    ("A model has $h = 64$ query heads", 8 / 64),  # the fraction left
    ("Sliding-window attention with a window of $w = 4$", 3 * 4),  # w, not w - 1, per layer
    ("Sliding-window attention with a window of $w = 4$", 4 - 1),  # one layer
    ("Sliding-window attention with a window of $w = 4$", 4),  # the window itself
    ("Rotary embeddings with $d_k = 8$", 10000 ** (-2 / 8)),  # omega_1, not times the position
    ("Rotary embeddings with $d_k = 8$", 5 * 10000**0),  # pair 0
    ("Rotary embeddings with $d_k = 8$", 5 * 10000 ** (2 / 8)),  # the divisor for the frequency
]


@pytest.mark.parametrize("start, value", NUMERIC, ids=[s[:40] for s, _ in NUMERIC])
def test_numeric_answer_is_the_independent_value(start, value):
    assert accepts(question_starting(CH12, start), value), f"the quiz does not accept {value}"


def test_every_numeric_question_is_audited():
    for q in quiz(CH12):
        if q["type"] == "numeric":
            assert any(q["question"].startswith(s) for s, _ in NUMERIC), q["question"][:60]


@pytest.mark.parametrize("start, value", MISTAKES, ids=[f"{s[:30]} {v:g}" for s, v in MISTAKES])
def test_a_named_mistake_gets_its_own_feedback(start, value):
    question = question_starting(CH12, start)
    assert not accepts(question, value) and explains_as_a_mistake(question, value), f"{start!r}: {value}"


def test_the_newest_query_reads_every_cached_key_and_the_top_left_mask_would_not():
    i = 4
    bottom_right = np.tri(1, i + 1, k=i, dtype=bool)  # one query at the last of i + 1 positions
    assert bottom_right.all() and int(lib.causal_mask(1, i + 1).sum()) == 1
    assert right_option(CH12, "A decoder with a KV cache is at step").get("answer").startswith("No mask")


def test_multi_query_attention_is_a_key_array_with_one_head():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(4, 5, 3)), rng.normal(size=(1, 5, 3)), rng.normal(size=(1, 5, 3))
    out = lib.grouped_query_attention(q, k, v)
    for head in range(4):
        np.testing.assert_allclose(out[head], lib.scaled_dot_product_attention(q[head], k[0], v[0]))
    assert right_option(CH12, "With `lib.grouped_query_attention(q, k, v)`")["answer"].startswith("$(1, n, d_k)$")


def test_turning_every_cached_key_at_the_querys_position_cancels_the_turns():
    q, k = np.array([[0.3, -1.1, 0.8, 0.5]]), np.array([[1.2, 0.4, -0.6, 0.9]])
    for i in (3, 40):
        assert (lib.rotate(q, [i]) @ lib.rotate(k, [i]).T).item() == pytest.approx((q @ k.T).item(), abs=1e-12)
    assert right_option(CH12, "A decoder with rotary embeddings caches")["answer"].startswith("Those of the same model")


def test_the_sinusoids_own_dot_product_depends_only_on_the_offset():
    """The distractor 'p_i p_j^T depends on i and j separately' is false."""
    for i, j in ((7, 3), (107, 103)):
        p_i, p_j = lib.sinusoidal_positions(i + 1, 8)[i], lib.sinusoidal_positions(j + 1, 8)[j]
        assert float(p_i @ p_j) == pytest.approx(sum(math.cos(4 * 10000 ** (-2 * r / 8)) for r in range(4)), abs=1e-12)


def test_a_rolling_cache_stops_growing_at_the_window():
    cache = lib.KVCache(window=4)
    sizes = []
    for _ in range(10):
        cache.append(np.zeros((1, 1, 2)), np.zeros((1, 1, 2)))
        sizes.append(len(cache))
    assert sizes == [1, 2, 3, 4, 4, 4, 4, 4, 4, 4]
    assert right_option(CH12, "Mistral 7B uses a sliding window")["answer"].startswith("It stops growing")
