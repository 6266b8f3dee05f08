"""Audit of chapters 0 and 1: every number they print, recomputed independently.

One test per claim. Inputs come from ``lib.examples`` and ``lib.handbuilt``
(inputs only); results are computed here with plain Python (``tests/naive.py``
and math.exp), never with lib.
"""

from __future__ import annotations

import math

import pytest
from chapter_pages import Page, assert_printed, numbers
from naive import dot, naive_attention, softmax

from sdpa_course import lib
from sdpa_course.lib import handbuilt


@pytest.fixture(scope="module")
def welcome() -> Page:
    return Page("chapters/00_welcome.html")


@pytest.fixture(scope="module")
def page() -> Page:
    return Page("chapters/01_self_attention.html")


def test_welcome_prerequisite_cell_prints_x_xt_and_exp(welcome):
    text = welcome.output_with("X has shape")
    assert_printed(numbers(text), [3, 2, 1, 1, 0, 1, 5, 6, 0, 6, 9, 1, math.e], 3)


def test_welcome_toy_example_prints_the_exact_weights_and_output(welcome):
    out, weights = naive_attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[2.0, 3.0], [4.0, 5.0]])
    assert_printed(numbers(welcome.line_with("weights:")), weights[0], 8)
    assert_printed(numbers(welcome.line_with("output:")), out[0], 8)


def test_welcome_map_names_chapter_9_and_homework_9(welcome):
    assert "A head that learns" in welcome.prose and "the backward pass of attention" in welcome.prose
    assert "chapters 3, 5" not in welcome.prose  # no stale list of explorer chapters


def test_cat_scores_are_dot_products(page):
    tokens, x = lib.example_sentence()
    text = page.output_with("scores of query 1")
    printed = [numbers(line.split("=")[1])[0] for line in text.splitlines() if "e_1" in line]
    assert_printed(printed, [dot(x[1], x[j]) for j in range(6)], 3)


def test_softmax_of_2_1_0_by_hand(page):
    expected = softmax([2.0, 1.0, 0.0])
    assert_printed(numbers(page.line_with("softmax by hand"))[:3], expected, 3)
    assert_printed(numbers(page.line_with("softmax([  2,   1,   0])"))[3:], expected, 3)
    assert_printed(numbers(page.line_with("softmax([  4,   2,   0])"))[3:], softmax([4.0, 2.0, 0.0]), 3)


def test_cat_weights_are_the_softmax_of_its_scores(page):
    tokens, x = lib.example_sentence()
    expected = softmax([dot(x[1], x[j]) for j in range(6)])
    text = page.output_with("a_10 =")
    printed = [numbers(line.split("=")[1])[0] for line in text.splitlines() if "a_1" in line]
    assert_printed(printed, expected, 3)
    largest = max(range(6), key=lambda j: expected[j])
    assert tokens[largest] == "mat"  # "took its largest weight from mat"


def test_encoder_sat_row_keeps_most_weight_on_itself_and_decoder_first_row_is_one(page):
    tokens, x = lib.example_sentence()
    _, weights = naive_attention(x.tolist(), x.tolist(), x.tolist(), scale=1.0)
    assert max(range(6), key=lambda j: weights[2][j]) == 2 and weights[2][2] > 0.8
    assert any('row of "sat" puts almost all of its weight on itself' in alt for alt in page.alts)


def test_soft_lookup_of_cherry_weights_0_993(page):
    table = handbuilt.lookup_table()
    scores = [dot(k, handbuilt.lookup_query("cherry")) for k in table["keys"]]
    weights = softmax(scores)
    assert_printed(
        numbers(page.output_with("query for 'cherry'").split("values:")[1].split("query")[0]), [10, 20, 30, 40], 0
    )
    assert_printed(numbers(page.line_with("weights: [0.002")), weights, 3)
    output = dot(weights, [10, 20, 30, 40])
    assert_printed(numbers(page.output_with("scores:  [0. 0. 6. 0.]").split("output:")[1]), [output], 3)
    assert f"{math.exp(6) / (math.exp(6) + 3):.3f}" == "0.993" and f"{1 / (math.exp(6) + 3):.4f}" == "0.0025"


def test_soft_lookup_between_cherry_and_date_blends_to_about_34(page):
    weights = softmax([0.0, 0.0, 3.0, 3.0])
    output = dot(weights, [10, 20, 30, 40])
    text = page.output_with("[0. 0. 3. 3.]")
    assert_printed(numbers(text.split("weights:")[1].split("output:")[0]), weights, 3)
    assert_printed(numbers(text.split("output:")[1]), [output], 3)
    assert round(weights[2], 2) == 0.48 and round(weights[0] + weights[1], 2) == 0.05
    assert 34 <= output <= 35


def test_decoder_query_0_weight_is_1(page):
    assert "o_0 equals v_0: True" in page.output_with("weights of query 0")
    assert_printed(numbers(page.line_with("weights of query 0"))[1:], [1, 0, 0, 0, 0, 0], 3)


def test_decoder_cat_weights_over_the_and_cat(page):
    tokens, x = lib.example_sentence()
    expected = softmax([dot(x[1], x[0]), dot(x[1], x[1])])
    line = [l for l in page.output_with("permitted positions").splitlines() if l.startswith("weights:")][0]
    assert_printed(numbers(line)[:2], expected, 3)


def test_cat_output_is_the_weighted_sum_and_lies_within_the_value_range(page):
    tokens, x = lib.example_sentence()
    weights = softmax([dot(x[1], x[j]) for j in range(6)])
    o = [sum(weights[j] * x[j][c] for j in range(6)) for c in range(4)]
    assert_printed(numbers(page.line_with("o_1 = [")), [1] + o + [4], 3)
    lows = [min(x[j][c] for j in range(6)) for c in range(4)]
    highs = [max(x[j][c] for j in range(6)) for c in range(4)]
    assert_printed(numbers(page.line_with("smallest value per coordinate")), lows, 3)
    assert_printed(numbers(page.line_with("largest value per coordinate")), highs, 3)
    assert all(lo <= v <= hi for lo, v, hi in zip(lows, o, highs))


def test_encoder_and_decoder_rows_sum_to_one_and_forbidden_cells_get_zero(page):
    tokens, x = lib.example_sentence()
    allowed = [[j <= i for j in range(6)] for i in range(6)]
    out_e, w_e = naive_attention(x.tolist(), x.tolist(), x.tolist(), scale=1.0)
    out_d, w_d = naive_attention(x.tolist(), x.tolist(), x.tolist(), allowed=allowed, scale=1.0)
    assert all(abs(sum(r) - 1) < 1e-12 for r in w_e + w_d)
    assert all(w_d[i][j] == 0.0 for i in range(6) for j in range(6) if j > i)
    assert out_d[0] == list(x[0]) or max(abs(a - b) for a, b in zip(out_d[0], x[0])) < 1e-12
    assert max(abs(a - b) for a, b in zip(out_d[5], out_e[5])) < 1e-12
    text = page.output_with("row sums, encoder")
    assert "weight on forbidden cells: 0.0" in text and text.count("True") == 2


@pytest.mark.parametrize("z", [-3.0, -0.5, 0.0, 1.25, 7.0])
def test_a_two_score_softmax_weight_has_log_odds_equal_to_the_score(z):
    # "with two scores z and 0, the softmax gives the first the weight
    # p = e^z / (e^z + 1), whose log-odds is exactly z"
    p = softmax([z, 0.0])[0]
    assert p == pytest.approx(math.exp(z) / (math.exp(z) + 1), rel=1e-12)
    assert math.log(p / (1 - p)) == pytest.approx(z, abs=1e-9)
