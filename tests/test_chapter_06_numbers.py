"""Chapter 6's numbers and claims, recomputed without lib's attention.

The inputs are the book's shared example inputs (``lib.example_sentence`` and
``lib.example_projections``: inputs only, no results). Weights and outputs are
computed by the plain-Python attention of ``tests/naive.py``; float16 and
float32 rounding by CPython's own packing of IEEE half and single precision
(``struct``), not by numpy. One test per claim. The numbers in the chapter's
sentences are glued from its code (myst-nb ``glue``); the tests compare those
values, by name, with the independent ones.
"""

from __future__ import annotations

import html
import math
import re
import struct
import sys

import numpy as np
import pytest
from built_book import built_page
from chapter_pages import Page
from glued import glued
from naive import naive_attention

from sdpa_course import lib
from sdpa_course.lib import handbuilt

CHAPTER = "chapters/06_causal_masking.html"
FILL16 = -65504.0


@pytest.fixture(scope="module")
def page() -> str:
    return html.unescape(built_page(CHAPTER))


@pytest.fixture(scope="module")
def values() -> dict:
    return glued("chapters/06_causal_masking")


@pytest.fixture(scope="module")
def outputs() -> Page:
    return Page(CHAPTER)


def printed(outputs: Page, label: str) -> str:
    """What the one output line holding ``label`` printed after it."""
    return outputs.line_with(label).split(label, 1)[1].strip()


@pytest.fixture(scope="module")
def qkv() -> tuple[list, list, list]:
    _, x = lib.example_sentence()
    w = lib.example_projections()
    return (x @ w["w_q"]).tolist(), (x @ w["w_k"]).tolist(), (x @ w["w_v"]).tolist()


def causal(n_q: int, n_k: int) -> list[list[bool]]:
    return [[j <= i for j in range(n_k)] for i in range(n_q)]


def to_float16(x: float) -> float:
    """Round x to IEEE half precision; -inf/inf when it overflows (CPython's packer)."""
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def test_unmasked_weights_are_fairly_even_as_chapter_4_says(qkv):
    # "like any untrained matrices they give fairly even weights"
    _, weights = naive_attention(*qkv)
    assert max(max(row) for row in weights) < 0.5
    assert min(min(row) for row in weights) > 0.05


def test_printed_row_sums_when_zeroing_after_the_softmax(page, qkv):
    _, weights = naive_attention(*qkv)
    expected = [sum(row[: i + 1]) for i, row in enumerate(weights)]
    m = re.search(r"row sums when zeroing after the softmax: \[([^\]]*)\]", page)
    assert m, "the row-sum line is missing"
    printed = [float(v) for v in m[1].split()]
    assert printed == pytest.approx(expected, abs=6e-4)
    # "Every row but the last loses the weight its future keys took; row 0 keeps
    # only the weight it gave itself."
    assert all(s < 1 for s in expected[:-1]) and expected[-1] == pytest.approx(1)
    assert expected[0] == pytest.approx(weights[0][0])


def test_row_0_of_the_causal_weights_is_one_then_zeros(qkv):
    _, weights = naive_attention(*qkv, allowed=causal(6, 6))
    assert weights[0] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_replacement_fill_gives_uniform_weights(page):
    m = re.search(r"\(b\) -1e9 replacing the scores: +\[([^\]]*)\]", page)
    assert m
    assert [float(v) for v in m[1].split()] == pytest.approx([1 / 6] * 6, abs=1e-4)


def test_additive_fill_gives_back_the_unmasked_weights(page, qkv):
    q, k, v = qkv
    _, free = naive_attention(q, k, v)
    m = re.search(r"\(c\) -1e9 added to the scores: +\[([^\]]*)\]", page)
    assert m
    assert [float(x) for x in m[1].split()] == pytest.approx(free[2], abs=6e-5)
    m = re.search(r"largest difference between \(c\) and no mask: ([0-9.e+-]+)", page)
    assert m and float(m[1]) < 1e-6
    # Independently: in float64 the added fill shifts every score by the same
    # amount up to rounding of about the spacing near 1e9, 2**-23.
    assert math.ulp(1e9) == 2.0**-23


def test_float32_spacing_near_1e9(outputs, values):
    above = struct.unpack("<f", struct.pack("<f", 1e9))[0]
    bits = struct.unpack("<I", struct.pack("<f", above))[0]
    nxt = struct.unpack("<f", struct.pack("<I", bits + 1))[0]
    assert values["float32_spacing_1e9"] == nxt - above == 64
    assert float(printed(outputs, "spacing of float32 numbers near 1e9:")) == nxt - above


def test_float16_largest_and_gap(outputs, values):
    largest = struct.unpack("<e", bytes.fromhex("ff7b"))[0]  # 0x7bff
    below = struct.unpack("<e", bytes.fromhex("fe7b"))[0]  # 0x7bfe
    assert values["float16_largest"] == largest == 65504 and values["float16_gap"] == largest - below == 32
    # The gap is 32 from 2**15 on: the float16 numbers there have the exponent of 32768.
    binade = struct.unpack("<e", bytes.fromhex("0078"))[0]  # 0x7800, the first float16 of that exponent
    assert values["float16_binade"] == binade == 32768
    assert binade - struct.unpack("<e", bytes.fromhex("ff77"))[0] == 16  # below it the gap halves
    assert float(printed(outputs, "largest float16:")) == largest
    assert float(printed(outputs, "gap from the largest float16 to the next one down:")) == largest - below
    # The fill, the first number beyond the range, and the halfway point between them.
    assert values["float16_fill"] == -largest
    assert values["float16_beyond"] == -largest - (largest - below) == -65536
    assert values["float16_halfway"] == (-largest - 65536) / 2 and to_float16(values["float16_halfway"]) == -math.inf


def test_float16_minus_1e9_overflows(page):
    assert to_float16(-1e9) == -math.inf
    assert "np.float16(-1e9) = -inf" in page


@pytest.mark.parametrize("score", [-1.0, -15.0, -15.9, -16.0, -20.0])
def test_float16_score_plus_fill_printed(page, score):
    expected = to_float16(to_float16(score) + FILL16)
    m = re.search(rf"float16: score +{score:.1f} \+ fill = (\S+)", page)
    assert m, f"no printed line for score {score}"
    assert float(m[1]) == expected


def test_float16_overflow_threshold_is_minus_16(values):
    # "That happens for a score of -16 or less": scan float16 scores around -16.
    assert values["float16_overflow_score"] == -16.0
    assert to_float16(-16.0 + FILL16) == -math.inf
    assert to_float16(to_float16(-15.99) + FILL16) == FILL16
    for score in np.arange(-15.9, 0.0, 0.1):
        assert to_float16(to_float16(float(score)) + FILL16) == FILL16
    for score in np.arange(-40.0, -16.0, 0.5):
        assert to_float16(to_float16(float(score)) + FILL16) == -math.inf
    assert to_float16(FILL16 + FILL16) == -math.inf


def test_scores_below_minus_16_are_almost_never_seen_at_unit_scale():
    # P(Z < -16) for a standard normal score
    assert 0.5 * math.erfc(16 / math.sqrt(2)) < 1e-50


def test_future_change_leaves_earlier_outputs_exactly_unchanged(qkv):
    _, x = lib.example_sentence()
    w = lib.example_projections()
    rng = np.random.default_rng(123)
    base, _ = naive_attention(*qkv, allowed=causal(6, 6))
    for j in range(6):
        x2 = x.copy()
        x2[j] = rng.normal(size=x.shape[1])
        out, _ = naive_attention(
            (x2 @ w["w_q"]).tolist(), (x2 @ w["w_k"]).tolist(), (x2 @ w["w_v"]).tolist(), allowed=causal(6, 6)
        )
        assert out[:j] == base[:j]


def test_kv_cache_claim_printed_and_recomputed(values):
    _, x = lib.example_sentence()
    w = lib.example_projections()

    def outs(xs, mask):
        return naive_attention(
            (xs @ w["w_q"]).tolist(), (xs @ w["w_k"]).tolist(), (xs @ w["w_v"]).tolist(), allowed=mask
        )[0]

    assert outs(x[:5], causal(5, 5)) == outs(x, causal(6, 6))[:5]
    assert outs(x[:5], None) != outs(x, None)[:5]
    assert values["kv_unchanged_causal"] is True and values["kv_unchanged_free"] is False


def test_mild_fill_leaks_and_large_fill_does_not(page, qkv):
    q, k, v = qkv
    scale = 1 / math.sqrt(len(q[0]))
    row = [scale * sum(a * b for a, b in zip(q[2], k[j])) for j in range(3)]
    top = max(row)
    leak = math.exp(-10 - top) / (sum(math.exp(s - top) for s in row) + 3 * math.exp(-10 - top))
    m = re.search(r"fill +-10: weights of the masked keys = \[([^\]]*)\]", page)
    assert m
    assert [float(x) for x in m[1].split()] == pytest.approx([leak] * 3, rel=1e-5)
    m = re.search(r"fill -1e\+09: weights of the masked keys = \[([^\]]*)\]", page)
    assert m and [float(x) for x in m[1].split()] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("chapter", ["05_why_divide_by_sqrt_dk", "06_causal_masking", "07_multi_head_preview"])
def test_at_least_two_predict_then_check_blocks(chapter):
    text = built_page(f"chapters/{chapter}.html")
    assert text.count("Predict, then check") >= 2


def test_fifteen_masked_entries_of_thirty_six(page, values):
    masked = sum(j > i for i in range(6) for j in range(6))
    assert values["masked_entries"] == masked == 6 * 5 // 2
    m = re.search(r"permitted entries: (\d+)\s+masked entries: (\d+)", page)
    assert m and (int(m[1]), int(m[2])) == (36 - masked, masked)


def test_fill_of_minus_1e9_underflows_in_float64():
    # "far below the smallest float64": exp(-1e9) is 0, the smallest positive float64 is about e^-744
    assert math.exp(-1e9) == 0.0 and math.log(5e-324) > -1e9


def test_padded_queries_get_zero_weights_and_outputs(page):
    _, x = lib.example_sentence()
    w = lib.example_projections()
    x_pad = np.vstack([np.zeros((2, x.shape[1])), x[:4]])
    real = [False, False, True, True, True, True]
    allowed = [[j <= i and real[j] for j in range(6)] for i in range(6)]
    out, weights = naive_attention(
        (x_pad @ w["w_q"]).tolist(), (x_pad @ w["w_k"]).tolist(), (x_pad @ w["w_v"]).tolist(), allowed=allowed
    )
    assert out[:2] == [[0.0, 0.0], [0.0, 0.0]] and weights[:2] == [[0.0] * 6] * 2
    assert re.search(r"outputs of the two <pad> queries:\s*\[\[0\. 0\.\]\s*\[0\. 0\.\]\]", page)
    assert "any NaN anywhere: False" in page


def test_bottom_right_alignment_reproduces_the_last_rows(page, qkv):
    q, k, v = qkv
    full, _ = naive_attention(q, k, v, allowed=causal(6, 6))
    top_left, _ = naive_attention(q[4:], k, v, allowed=causal(2, 6))
    bottom_right, _ = naive_attention(q[4:], k, v, allowed=[[j <= i + 4 for j in range(6)] for i in range(2)])
    assert np.allclose(bottom_right, full[4:]) and not np.allclose(top_left, full[4:])
    assert re.search(r"top-left alignment reproduces rows 4 and 5: +False", page)
    assert re.search(r"bottom-right alignment reproduces rows 4 and 5: +True", page)


def test_float16_fill_is_unchanged_only_between_minus_16_and_16(page, values):
    # "a score between -16 and +16 plus the fill is simply -65504 (from +16 up,
    # the sum rounds to the next float16 above it, -65472)"
    for score in np.arange(-15.9, 16.0, 0.1):
        assert to_float16(to_float16(float(score)) + FILL16) == FILL16, score
    assert to_float16(16.0 + FILL16) == -65472.0
    assert to_float16(to_float16(-65472.0) - 32.0) == FILL16  # the next float16 below is the fill
    assert values["float16_rounds_up_score"] == 16.0 and values["float16_above_fill"] == -65472.0
    for score in (15.9, 16.0):
        expected = to_float16(to_float16(score) + FILL16)
        m = re.search(rf"float16: score +{score:.1f} \+ fill = (\S+)", page)
        assert m and float(m[1]) == expected, score


def test_significant_digits_of_float16_and_bfloat16(values):
    # float16 keeps 11 significant bits (10 stored, CPython's packer: 1 + 2**-10 is
    # the next number after 1), bfloat16 8 (7 stored; Kalamkar et al. 2019):
    # "about 3" and "about 2.4" decimal digits.
    assert to_float16(1 + 2.0**-10) == 1 + 2.0**-10 and to_float16(1 + 2.0**-11) == 1.0
    assert round(11 * math.log10(2), 1) == 3.3
    assert round(8 * math.log10(2), 1) == 2.4
    assert values["bfloat16_digits"] == pytest.approx(8 * math.log10(2), rel=1e-12)


def test_lib_reproduces_trap_c_with_a_float_mask(page, qkv):
    # "a float mask of -1e9 reproduces (c), as the next cell shows"
    q, k, v = qkv
    _, free = naive_attention(q, k, v)
    mask = np.zeros((6, 6))
    mask[2] = -1e9
    _, w = lib.scaled_dot_product_attention(np.array(q), np.array(k), np.array(v), mask, return_weights=True)
    assert w[2] == pytest.approx(free[2], abs=1e-6)
    assert re.search(r"lib, float mask -1e9 on row 2: row 2 equals the unmasked row:\s+True", page)


def test_running_average_matrix_and_softmax_of_masked_zeros(page, outputs, qkv):
    # A has a_ij = 1/(i+1) for j <= i; A @ V is the average of the values so far;
    # the softmax of masked zeros is A, so row 2 is (1/3, 1/3, 1/3, 0, 0, 0).
    _, _, v = qkv
    m = [[1 / (i + 1) if j <= i else 0.0 for j in range(6)] for i in range(6)]
    block = page[page.index("[[1.    0.") :]
    shown = [float(t) for t in re.findall(r"[-+]?\d+\.\d*", block[: block.index("]]") + 2])]
    assert shown == pytest.approx([w for row in m for w in row], abs=6e-4)
    running = [[sum(v[j][c] for j in range(i + 1)) / (i + 1) for c in range(2)] for i in range(6)]
    mv = [[sum(m[i][j] * v[j][c] for j in range(6)) for c in range(2)] for i in range(6)]
    assert mv == [pytest.approx(r, abs=1e-12) for r in running]
    assert printed(outputs, "A @ V is the average of the values so far:") == "True"
    zeros_softmax = [[1.0 if j <= i else 0.0 for j in range(6)] for i in range(6)]
    zeros_softmax = [[w / sum(row) for w in row] for row in zeros_softmax]
    assert zeros_softmax == [pytest.approx(r) for r in m]
    row2 = re.search(r"^row 2: \[([^\]]*)\]", outputs.output_with("softmax of masked zeros equals A"), re.M)
    assert row2 and [float(t) for t in row2[1].split()] == pytest.approx(zeros_softmax[2], abs=6e-4)
    assert printed(outputs, "softmax of masked zeros equals A:") == "True"


def test_row_3_predict_sat_takes_the_largest_weight(qkv, values):
    # "Row 3's largest permitted score is the one with "sat", well above the
    # other three, so "sat" takes the largest weight: x times the 1/4"
    q, k, _ = qkv
    scores = [sum(a * b for a, b in zip(q[3], k[j])) / math.sqrt(3) for j in range(4)]
    _, weights = naive_attention(*qkv, allowed=causal(6, 6))
    top = max(range(4), key=lambda j: scores[j])
    assert max(range(6), key=lambda j: weights[3][j]) == top
    assert values["row3_top_key"] == lib.SENTENCE[top] == "sat"
    assert values["row3_top_score"] == pytest.approx(scores[top], abs=1e-12)
    others = [s for j, s in enumerate(scores) if j != top]
    assert values["row3_other_scores"] == ", ".join(f"{s:.2f}" for s in others)
    assert scores[top] - max(others) > 0.5  # "well above"
    assert values["row3_top_weight"] == pytest.approx(weights[3][top], abs=1e-12)
    assert values["row3_top_over_average"] == pytest.approx(weights[3][top] / 0.25, abs=1e-12)
    assert weights[3][4:] == [0.0, 0.0]


def test_the_reference_weights_are_the_softmax_of_the_masked_scores_to_the_last_bit(values, qkv):
    # The page's claim is about lib's reference: its weights are computed as the
    # softmax of the masked scaled scores, so comparing the two with == holds.
    assert values["same_weights"] is True
    q, k, v = (np.array(a) for a in qkv)
    _, w = lib.scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
    _, naive_w = naive_attention(*qkv, allowed=causal(6, 6))
    assert np.allclose(w, naive_w, rtol=0, atol=1e-15)


def test_nadaraya_watson_weights_are_a_softmax(outputs):
    # Gaussian kernel weights e^{-(x - x_j)^2/2} / sum equal softmax_j(-(x - x_j)^2/2),
    # and -(x - x_j)^2/2 = x x_j - x^2/2 - x_j^2/2.
    x_train, y_train, x_query = [0.0, 1.0, 2.0, 3.0], [1.0, 3.0, 2.0, 5.0], 1.4
    kernel = [math.exp(-((x_query - xj) ** 2) / 2) for xj in x_train]
    weights = [w / sum(kernel) for w in kernel]
    estimate = sum(w * y for w, y in zip(weights, y_train))
    assert float(printed(outputs, "estimate at x = 1.4:")) == pytest.approx(estimate, abs=6e-4)
    assert printed(outputs, "Gaussian-kernel weights equal the softmax of -(x - x_j)^2 / 2:") == "True"
    for xj in x_train:
        assert -((x_query - xj) ** 2) / 2 == pytest.approx(x_query * xj - x_query**2 / 2 - xj**2 / 2)


def test_previous_token_head_under_the_causal_mask(page, values):
    # "the weight is e^{4.90} / (e^{4.90} + i) instead of e^{4.90} / (e^{4.90} + 5),
    # from 0.993 in row 1 down to the unchanged 0.964 in row 5"; row 0 goes from 1/6 to 1.
    head = handbuilt.previous_token_head(lib.SENTENCE)
    x = np.asarray(head["x"])
    q, k, v = ((x @ head[m]).tolist() for m in ("w_q", "w_k", "w_v"))
    _, free = naive_attention(q, k, v)
    _, masked = naive_attention(q, k, v, allowed=causal(6, 6))
    big = math.exp(12 / math.sqrt(6))
    for i in range(1, 6):
        assert masked[i][i - 1] == pytest.approx(big / (big + i), rel=1e-12)
        assert free[i][i - 1] == pytest.approx(big / (big + 5), rel=1e-12)
    assert values["prev_score"] == pytest.approx(12 / math.sqrt(6), rel=1e-12)
    assert values["prev_free"] == pytest.approx(free[1][0], rel=1e-12)
    assert values["prev_causal_row1"] == pytest.approx(masked[1][0], rel=1e-12)
    # "down to the unchanged ... in row 5": the last row reads every key either way.
    assert values["prev_causal_last"] == pytest.approx(masked[5][4], rel=1e-12) == pytest.approx(free[5][4])
    assert masked[0] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0] and free[0] == pytest.approx([1 / 6] * 6)
    m = re.search(r"rows 1-5, no mask: \[([^\]]*)\]", page)
    assert m and [float(t) for t in m[1].split()] == pytest.approx([free[i][i - 1] for i in range(1, 6)], abs=6e-4)
    m = re.search(r"rows 1-5, causal: +\[([^\]]*)\]", page)
    assert m and [float(t) for t in m[1].split()] == pytest.approx([masked[i][i - 1] for i in range(1, 6)], abs=6e-4)


def test_the_chapter_s_glue_runs_where_myst_nb_is_missing(monkeypatch):
    # The in-browser Python has no myst-nb: the chapter's cells that glue must still run there.
    from sdpa_course.teaching.glue import glue

    monkeypatch.setitem(sys.modules, "myst_nb", None)  # "import myst_nb" now raises ImportError
    with pytest.raises(ImportError):
        import myst_nb  # noqa: F401
    assert glue("masked_entries", 15) is None
