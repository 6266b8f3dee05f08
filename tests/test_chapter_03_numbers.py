"""Audit of chapter 3: its printed numbers and figure claims, recomputed with
numpy written out here (inputs from lib.examples and lib.handbuilt)."""

from __future__ import annotations

import numpy as np
import pytest
from chapter_pages import Page, assert_printed, numbers

from sdpa_course import lib
from sdpa_course.lib import handbuilt


@pytest.fixture(scope="module")
def page() -> Page:
    return Page("chapters/03_queries_keys_values.html")


def _qk():
    tokens, x = lib.example_sentence()
    w = lib.example_projections()
    return tokens, x, w, x @ w["w_q"], x @ w["w_k"]


def test_shapes_n6_dmodel4_dk3_dv2(page):
    text = page.output_with("W_V :")
    assert_printed(numbers(text), [6, 4, 4, 3, 4, 3, 4, 2], 0)


def test_q_printed(page):
    tokens, x, w, q, k = _qk()
    assert_printed(numbers(page.output_with("Q: (6, 3)").split("Q =")[1]), q.ravel(), 3)


def test_projected_scores_printed(page):
    tokens, x, w, q, k = _qk()
    e = np.einsum("ir,jr->ij", q, k)
    assert_printed(numbers(page.output_with("Q K^T =").split("=")[1]), e.ravel(), 3)


def test_sat_the_negative_the_sat_positive(page):
    tokens, x, w, q, k = _qk()
    e = q @ k.T
    assert e[2, 0] < -0.5 and e[0, 2] > 0
    assert_printed(numbers(page.line_with("e_20 ="))[-1:], [e[2, 0]], 3)
    assert_printed(numbers(page.line_with("largest |e_ij - e_ji|:"))[-1:], [np.abs(e - e.T).max()], 3)


def test_rows_where_self_wins(page):
    tokens, x, w, q, k = _qk()
    raw, proj = x @ x.T, q @ k.T

    def wins(e):
        return [tokens[i] for i in range(6) if e[i].argmax() == i]

    assert page.line_with("raw scores:").split(":", 1)[1].strip() == str(wins(raw))
    assert page.line_with("projected scores:").split(":", 1)[1].strip() == str(wins(proj))


def test_pronoun_head_only_it_cat_scores_8(page):
    head = handbuilt.pronoun_head()
    q, k = head["x"] @ head["w_q"], head["x"] @ head["w_k"]
    e = np.einsum("ir,jr->ij", q, k)
    assert list(zip(*np.nonzero(e))) == [(6, 1)] and e[6, 1] == 8 and e[1, 6] == 0
    assert "e_61 = 8" in page.output_with("e_61") and "e_16 = 0" in page.output_with("e_61")
    assert_printed(numbers(page.output_with("e_61").split("query 'it'")[0]), e.ravel(), 0)


def test_they_matches_dogs(page):
    head = handbuilt.pronoun_head(("the", "cat", "saw", "the", "dogs", "and", "they", "ran"))
    e = (head["x"] @ head["w_q"]) @ (head["x"] @ head["w_k"]).T
    assert list(zip(*np.nonzero(e))) == [(6, 4)]
    assert page.output_with("non-zero: query").strip() == "non-zero: query 6 'they', key 4 'dogs': 8"


def test_explorer_asymmetry_grows_with_t(page):
    tokens, x, w, q, k = _qk()
    for t in (0.0, 0.5, 1.0):
        qt = x @ ((1 - t) * w["w_k"] + t * w["w_q"])
        e = qt @ k.T
        assert (
            f"t = {t:.1f}: symmetric = {np.allclose(e, e.T)!s:5}   largest |e_ij - e_ji| = {np.abs(e - e.T).max():.3f}"
            in page.output_with("t = 0.0: symmetric")
        )


def test_query_of_sat_by_hand(page):
    tokens, x, w, q, k = _qk()
    assert_printed(numbers(page.line_with("x_2 W_Q =")), [2] + list(x[2] @ w["w_q"]), 3)


def test_score_matrix_factors_through_m_which_is_not_symmetric(page):
    tokens, x, w, q, k = _qk()
    m = np.einsum("ar,br->ab", w["w_q"], w["w_k"])
    assert np.allclose(x @ m @ x.T, q @ k.T) and not np.allclose(m, m.T)
    text = page.output_with("E = X W_QK X^T")
    assert "E = X W_QK X^T: True" in text and "W_QK symmetric: False" in text
