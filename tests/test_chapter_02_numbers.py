"""Audit of chapter 2: every number it prints and every claim in its figures'
alt text, recomputed independently (numpy written out here, never lib)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chapter_pages import Page, assert_printed, numbers
from glued import glued

from sdpa_course import lib
from sdpa_course.lib import handbuilt


@pytest.fixture(scope="module")
def page() -> Page:
    return Page("chapters/02_raw_dot_product_scores.html")


def _scores():
    tokens, x = lib.example_sentence()
    return tokens, x, np.einsum("ir,jr->ij", x, x)


def test_cat_on_score_loop(page):
    tokens, x, e = _scores()
    assert_printed(numbers(page.line_with("e_13 =")), [13, e[1, 3]], 3)


def test_score_matrix_printed(page):
    tokens, x, e = _scores()
    text = page.output_with("E has shape")
    assert_printed(numbers(text)[2:], e.ravel(), 3)


def test_largest_score_7_54_is_sat_with_itself(page):
    tokens, x, e = _scores()
    i, j = np.unravel_index(e.argmax(), e.shape)
    assert (i, j) == (2, 2) and f"{e.max():.2f}" == "7.54"
    claim = f'The largest entry, {e.max():.2f}, is the diagonal cell of "{tokens[i]}".'
    assert any(claim in alt for alt in page.alts), claim


def test_row_maxima_sat_and_mat_on_diagonal_the_cat_prefer_mat_on_prefers_sat(page):
    tokens, x, e = _scores()
    best = [tokens[int(r.argmax())] for r in e]
    assert best == ["mat", "mat", "sat", "sat", "mat", "mat"]
    assert [i for i in range(6) if e[i].argmax() == i] == [2, 5]  # "true for only two rows"
    on_diagonal = [tokens[i] for i in range(6) if e[i].argmax() == i]
    claim = (
        f'The outlined row maxima are on the diagonal for "{on_diagonal[0]}" and "{on_diagonal[1]}"; '
        f'the rows of "{tokens[0]}" and "{tokens[1]}" have their maximum in the column of "{best[0]}", '
        f'and the row of "{tokens[3]}" in the column of "{best[3]}".'
    )
    assert best[1] == best[0] and any(claim in alt for alt in page.alts), claim
    said = (
        f"true for only two rows, “{on_diagonal[0]}” and “{on_diagonal[1]}”. The rows of “{tokens[0]}” and "
        f"“{tokens[1]}” prefer “{best[0]}”, and the row of “{tokens[3]}” prefers “{best[3]}”"
    )
    assert said in page.prose, said


def test_one_hot_scores_have_eight_ones(page):
    vocab, onehot = handbuilt.one_hot_words(lib.SENTENCE)
    e = np.array([[float(a == b) for b in lib.SENTENCE] for a in lib.SENTENCE])
    assert (e == 1).sum() == 8 and e[0, 4] == e[4, 0] == 1
    printed = page.output_with("[[1. 0. 0. 0. 1. 0.]")
    assert_printed(numbers(printed)[: e.size], e.ravel(), 0)  # the matrix; the softmax of row 2 follows


def test_self_match_shares_one_third_three_quarters_then_all(page):
    rng = np.random.default_rng(0)
    shares = {}
    for d in [1, 2, 4, 8, 16, 32, 64, 128]:
        xs = rng.normal(size=(2000, 6, d))
        e = np.einsum("tir,tjr->tij", xs, xs)
        shares[d] = np.mean(np.diagonal(e, axis1=1, axis2=2) >= e.max(axis=2))
    lines = [numbers(line) for line in page.output_with("d_model =    1").splitlines() if "self-score" in line]
    assert [int(d) for d, _ in lines] == list(shares)  # d_model, and the share in percent
    assert_printed([share for _, share in lines], [100 * share for share in shares.values()], 2)
    assert abs(shares[1] - 1 / 3) < 0.02 and shares[4] > 0.75
    assert all(shares[d] == 1.0 for d in (32, 64, 128))


def test_width_64_every_token_keeps_its_weight_except_the_two_the(page):
    _, x = lib.example_sentence(d_model=64)
    e = x @ x.T
    w = np.exp(e - e.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    assert all(w[i, i] > 0.99 for i in (1, 2, 3, 5))
    assert abs(w[0, 0] - 0.5) < 0.01 and abs(w[0, 4] - 0.5) < 0.01
    assert_printed(numbers(page.line_with("a_ii at d_model = 64"))[1:], np.diag(w), 3)


def test_projected_scores_are_not_symmetric(page):
    tokens, x = lib.example_sentence()
    w = lib.example_projections()
    learned = (x @ w["w_q"]) @ (x @ w["w_k"]).T
    assert_printed(numbers(page.line_with("with queries and keys"))[-1:], [np.abs(learned - learned.T).max()], 3)


def test_cat_on_vectors_norms_and_cosine(page):
    tokens, x, e = _scores()
    assert_printed(numbers(page.line_with("(cat)"))[1:], x[1], 3)
    assert_printed(numbers(page.line_with("(on)"))[1:], x[3], 3)
    n1, n3 = np.sqrt((x[1] ** 2).sum()), np.sqrt((x[3] ** 2).sum())
    assert_printed(numbers(page.line_with("|x_1| = ")), [1, n1, 3, n3, e[1, 3] / (n1 * n3)], 3)
    assert_printed(numbers(page.line_with("|x_1| |x_3| cos(theta)"))[-1:], [e[1, 3]], 3)


def test_sat_on_symmetry_and_the_row_wise_weights(page):
    tokens, x, e = _scores()
    assert_printed(numbers(page.line_with("('sat' reads 'on')"))[-1:], [e[2, 3]], 6)
    assert_printed(numbers(page.line_with("('on' reads 'sat')"))[-1:], [e[3, 2]], 6)
    assert e[2, 3] == e[3, 2]
    w = np.exp(e - e.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    assert_printed(numbers(page.line_with("a_23 =")), [23, w[2, 3], 32, w[3, 2], e[2, 3]], 3)


def test_diagonal_is_the_squared_length(page):
    tokens, x, e = _scores()
    assert_printed(numbers(page.line_with("diagonal e_ii :")), (x**2).sum(axis=1), 3)
    assert_printed(numbers(page.line_with("|x_i|^2       :"))[1:], (x**2).sum(axis=1), 3)


def test_row_maximum_table(page):
    tokens, x, e = _scores()
    text = page.output_with("diagonal is the max")
    for r, line in enumerate(l for l in text.splitlines() if "e_ii" in l):
        c = int(e[r].argmax())
        assert_printed(numbers(line), [r, e[r, r], e[r].max(), c], 3)  # row, e_ii, its max, where the max is
        fields = line.split()
        assert fields[fields.index("at") + 2] == tokens[c], line
        assert line.rstrip().endswith(str(bool(np.isclose(e[r, r], e[r].max()))))


def test_unit_vectors_match_themselves_best_and_the_two_the_tie(page):
    tokens, x, e = _scores()
    unit = x / np.sqrt((x**2).sum(axis=1, keepdims=True))
    c = unit @ unit.T
    assert np.allclose(np.diag(c), 1) and np.allclose(np.diag(c), c.max(axis=1))
    assert np.isclose(c[0, 4], 1) and np.isclose(c[4, 0], 1)
    assert page.line_with("row's maximum").endswith(": True")


def test_a_layernorm_output_has_length_sqrt_d_model():
    # "Such a vector has length sqrt(d_model) (a hair less, ...: LayerNorm adds a tiny eps to the variance)":
    # the standardised row written out with plain Python sums, and lib's LayerNorm a hair shorter.
    rng = np.random.default_rng(2)
    for d_model in (4, 64, 512):
        x = [float(v) for v in rng.normal(loc=3.0, scale=5.0, size=d_model)]
        mean = sum(x) / d_model
        var = sum((v - mean) ** 2 for v in x) / d_model
        normed = [(v - mean) / var**0.5 for v in x]
        assert sum(v * v for v in normed) ** 0.5 == pytest.approx(d_model**0.5, rel=1e-12)
        with_eps = float(np.linalg.norm(lib.layer_norm(x)))
        assert d_model**0.5 * (1 - 1e-5) < with_eps < d_model**0.5


def test_one_hot_scores_let_sat_read_cat_but_never_prefer_it():
    """The dropdown: with one-hot scores "sat" gives itself e / (e + 5) and every other word 1 / (e + 5)."""
    glue = glued("chapters/02_raw_dot_product_scores")
    assert glue["sat_self"] == pytest.approx(math.e / (math.e + 5), rel=1e-12)
    assert glue["sat_cat"] == pytest.approx(1 / (math.e + 5), rel=1e-12)
