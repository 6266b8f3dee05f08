"""Chapter 5's saturation and gradient numbers, recomputed independently.

The chapter draws, for every key width d_k in 1, 2, 4, ..., 512, 2 000 queries
with 16 keys each (numpy's default_rng(20170613), queries then keys, width by
width) and prints, unscaled and scaled: the saturation of the softmax, the
size of the softmax Jacobian J and of the gradient G = da/dq = J (cK).

This test draws the same random numbers but computes everything without lib
and without the chapter's formula for G:

- weights with its own softmax (numpy exp);
- the gradient from a separately derived formula,
  da_i/dq = c a_i (k_i - sum_j a_j k_j), itself checked against central finite
  differences below;
- the Frobenius norm of J from the identity
  ||diag(a) - a a^T||_F^2 = sum a_i^2 - 2 sum a_i^3 + (sum a_i^2)^2.

Then every printed number and every number-like claim of the prose, captions
and alt text is compared with it, one test per claim.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pytest
from built_book import built_page

CHAPTER = "chapters/05_why_divide_by_sqrt_dk.html"
D_KS = tuple(2**p for p in range(10))
N_QUERIES, N_KEYS = 2_000, 16
NUMBER = r"([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def own_softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def gradient_by_formula(q: np.ndarray, k: np.ndarray, c: float) -> np.ndarray:
    """da/dq for queries q (m, d) and keys k (m, n, d): shape (m, n, d)."""
    a = own_softmax(c * np.einsum("md,mnd->mn", q, k))
    k_bar = np.einsum("mn,mnd->md", a, k)
    return c * a[:, :, None] * (k - k_bar[:, None, :])


@pytest.fixture(scope="module")
def independent() -> dict:
    """Per case and width: weights statistics, ||J||_F and ||G||_F for every query."""
    rng = np.random.default_rng(20170613)
    out: dict = {"unscaled": {}, "scaled": {}}
    for d_k in D_KS:
        q = rng.standard_normal((N_QUERIES, 1, d_k))[:, 0, :]
        k = rng.standard_normal((N_QUERIES, N_KEYS, d_k))
        for case, c in (("unscaled", 1.0), ("scaled", 1 / math.sqrt(d_k))):
            a = own_softmax(c * np.einsum("md,mnd->mn", q, k))
            sq = (a**2).sum(axis=1)
            jac = np.sqrt(np.maximum(sq - 2 * (a**3).sum(axis=1) + sq**2, 0))
            grad = np.sqrt((gradient_by_formula(q, k, c) ** 2).sum(axis=(1, 2)))
            with np.errstate(divide="ignore", invalid="ignore"):
                ent = -np.where(a > 0, a * np.log(a), 0.0).sum(axis=1)
            out[case][d_k] = {"jac": jac, "grad": grad, "largest": a.max(axis=1), "entropy": ent}
    return out


@pytest.fixture(scope="module")
def page() -> str:
    return html.unescape(built_page(CHAPTER))


def test_gradient_formula_agrees_with_finite_differences():
    rng = np.random.default_rng(1)
    for d_k, c in ((8, 1.0), (8, 1 / math.sqrt(8)), (512, 1 / math.sqrt(512)), (64, 1.0)):
        q = rng.standard_normal((1, d_k))
        k = rng.standard_normal((1, N_KEYS, d_k))
        formula = gradient_by_formula(q, k, c)[0]
        h = 1e-6
        fd = np.empty_like(formula)
        for r in range(d_k):
            step = np.zeros((1, d_k))
            step[0, r] = h
            up = own_softmax(c * np.einsum("md,mnd->mn", q + step, k))[0]
            down = own_softmax(c * np.einsum("md,mnd->mn", q - step, k))[0]
            fd[:, r] = (up - down) / (2 * h)
        np.testing.assert_allclose(formula, fd, rtol=0, atol=1e-6)


def test_printed_finite_difference_checks_agree_to_about_ten_decimals(page):
    found = re.findall(r"largest difference from finite differences " + NUMBER, page)
    assert len(found) == 2, f"expected the J and G finite-difference lines, found {found}"
    assert all(float(x) < 1e-9 for x in found), found


def _gradient_table(page: str) -> dict[int, list[float]]:
    header = re.search(r"median \|\|J\|\|_F\s+median \|\|G\|\|_F\s+mean \|\|G\|\|_F", page)
    assert header, "the printed table of ||J||_F and ||G||_F is missing"
    start = header.start()
    rows = {}
    for line in page[start:].splitlines()[2:]:
        parts = line.split()
        if len(parts) != 7 or not parts[0].isdigit():
            break
        rows[int(parts[0])] = [float(x) for x in parts[1:]]
    return rows


def test_printed_jacobian_and_gradient_table_matches(page, independent):
    table = _gradient_table(page)
    assert sorted(table) == list(D_KS), f"table rows {sorted(table)}"
    for d_k, cells in table.items():
        expected = [np.median(independent[c][d_k]["jac"]) for c in ("unscaled", "scaled")]
        expected += [np.median(independent[c][d_k]["grad"]) for c in ("unscaled", "scaled")]
        expected += [independent[c][d_k]["grad"].mean() for c in ("unscaled", "scaled")]
        assert cells == pytest.approx(expected, rel=6e-3), f"d_k={d_k}: printed {cells}, expected {expected}"


def test_printed_summary_at_512_matches(page, independent):
    m = re.search(
        r"d_k = 512, unscaled: median " + NUMBER + r", mean " + NUMBER + r"; (\d+)% of queries below 0\.01, "
        r"(\d+)% above 1, largest " + NUMBER,
        page,
    )
    assert m, "the d_k = 512 unscaled summary line is missing"
    g = independent["unscaled"][512]["grad"]
    assert float(m[1]) == pytest.approx(np.median(g), rel=6e-3)
    assert float(m[2]) == pytest.approx(g.mean(), rel=6e-3)
    assert int(m[3]) == round(100 * (g < 0.01).mean())
    assert int(m[4]) == round(100 * (g > 1).mean())
    assert float(m[5]) == pytest.approx(g.max(), rel=6e-3)
    s = independent["scaled"][512]["grad"]
    m = re.search(
        r"d_k = 512, scaled: +median "
        + NUMBER
        + r", mean "
        + NUMBER
        + r"; all queries between "
        + NUMBER
        + r" and "
        + NUMBER,
        page,
    )
    assert m, "the d_k = 512 scaled summary line is missing"
    assert [float(x) for x in m.groups()] == pytest.approx([np.median(s), s.mean(), s.min(), s.max()], rel=6e-3)


def test_issue_claim_unscaled_median_small_but_mean_large(independent):
    # At d_k = 512 without the scale the median is about 0.011 and the mean about 1.7;
    # with it both are about 0.30. This sample must give the same orders of magnitude.
    g = independent["unscaled"][512]["grad"]
    s = independent["scaled"][512]["grad"]
    assert 0.005 < np.median(g) < 0.05 and 1.0 < g.mean() < 2.5
    assert 0.25 < np.median(s) < 0.35 and 0.25 < s.mean() < 0.35


def test_claim_unscaled_median_more_than_ten_times_smaller_than_scaled(independent):
    ratio = np.median(independent["scaled"][512]["grad"]) / np.median(independent["unscaled"][512]["grad"])
    assert ratio > 10, ratio


def test_claim_unscaled_mean_about_five_times_the_scaled(independent):
    # Quiz feedback: "about five times larger at d_k = 512".
    ratio = independent["unscaled"][512]["grad"].mean() / independent["scaled"][512]["grad"].mean()
    assert 4.5 < ratio < 6, ratio


def test_claim_largest_gradients_are_several_units_hundreds_of_times_the_median(independent):
    g = independent["unscaled"][512]["grad"]
    assert 3 < g.max() < 13, g.max()  # alt text: "between about 1 and 12"
    assert g.max() / np.median(g) > 100
    assert (g > 1).mean() > 0.2  # a visible cluster above 1


def test_claim_unscaled_spread_over_twenty_powers_of_ten_none_below_the_floor(independent):
    g = independent["unscaled"][512]["grad"]
    assert g.min() > 1e-30, "the figure's floor 1e-30 would hide norms below it"
    assert math.log10(g.max() / g.min()) > 20


def test_claim_alt_text_median_near_0_02_mean_near_1_7(independent):
    g = independent["unscaled"][512]["grad"]
    assert 0.015 < np.median(g) < 0.025
    assert 1.5 < g.mean() < 1.9


def test_claim_unscaled_median_rises_up_to_32_then_falls(independent):
    medians = [np.median(independent["unscaled"][d]["grad"]) for d in D_KS]
    peak = D_KS[int(np.argmax(medians))]
    assert peak in (16, 32), peak
    assert 4.5 < max(medians) / medians[0] < 5.5  # alt text: "first rises about five-fold, up to d_k 16 to 32"
    after = medians[D_KS.index(32) :]
    assert all(b < a for a, b in zip(after, after[1:])), after
    assert medians[-1] < medians[0]


def test_claim_unscaled_mean_rises_steadily_above_1_5(independent):
    means = [independent["unscaled"][d]["grad"].mean() for d in D_KS]
    assert all(b > a for a, b in zip(means, means[1:])), means
    assert means[-1] > 1.5


def test_claim_scaled_median_and_mean_stay_near_0_3(independent):
    for d in D_KS:
        g = independent["scaled"][d]["grad"]
        assert 0.23 < np.median(g) < 0.32 and 0.23 < g.mean() < 0.32, d


def test_claim_unscaled_jacobian_median_falls(independent):
    medians = [np.median(independent["unscaled"][d]["jac"]) for d in D_KS]
    assert medians[-1] < 1e-3 < 0.2 < medians[0]


def test_printed_saturation_summary_matches(page, independent):
    m = re.search(
        r"effective number of keys e\^H = " + NUMBER + r"; largest weight above 0\.99 for (\d+)% of queries", page
    )
    assert m, "the saturation summary line is missing"
    u = independent["unscaled"][512]
    assert float(m[1]) == pytest.approx(math.exp(u["entropy"].mean()), abs=0.006)
    assert int(m[2]) == round(100 * (u["largest"] > 0.99).mean())
    assert float(m[1]) < 1.5  # "barely more than one"


def test_claim_saturation_alt_text(independent):
    largest_u = [independent["unscaled"][d]["largest"].mean() for d in D_KS]
    largest_s = [independent["scaled"][d]["largest"].mean() for d in D_KS]
    ent_u = [independent["unscaled"][d]["entropy"].mean() for d in D_KS]
    ent_s = [independent["scaled"][d]["entropy"].mean() for d in D_KS]
    assert largest_u[0] == pytest.approx(0.2, abs=0.02) and largest_u[-1] == pytest.approx(0.95, abs=0.01)
    assert all(abs(x - 0.24) < 0.03 for x in largest_s)
    assert ent_u[0] == pytest.approx(2.4, abs=0.05) and ent_u[-1] == pytest.approx(0.14, abs=0.01)
    assert all(abs(x - 2.36) < 0.07 for x in ent_s) and max(ent_s) < math.log(16)


def test_claim_std_of_a_score_at_64_and_512():
    # "a score of width 64 typically lies about +-8 from 0, and one of width 512 about +-22.6"
    assert math.sqrt(64) == 8 and round(math.sqrt(512), 1) == 22.6


def test_lib_softmax_jacobian_matches_finite_differences_and_rejects_bad_input():
    from sdpa_course.lib.softmax import softmax_jacobian

    rng = np.random.default_rng(5)
    s = rng.normal(scale=3, size=(3, 7))
    jac = softmax_jacobian(own_softmax(s))
    assert jac.shape == (3, 7, 7)
    h = 1e-6
    for j in range(7):
        step = np.zeros(7)
        step[j] = h
        fd = (own_softmax(s + step) - own_softmax(s - step)) / (2 * h)
        np.testing.assert_allclose(jac[:, :, j], fd, atol=1e-8)
    with pytest.raises(ValueError, match="weights"):
        softmax_jacobian(5.0)
    with pytest.raises(ValueError, match="weights"):
        softmax_jacobian([0.5, float("nan")])
    with pytest.raises(TypeError, match="weights"):
        softmax_jacobian(np.array([True, False]))


@pytest.mark.parametrize("scores", [(0.0, 0.0), (1.3, -0.4), (6.0, -2.0)])
def test_two_key_jacobian_is_p_times_1_minus_p(scores):
    # The derivation for two keys: da1/ds1 = a1 (1 - a1), da1/ds2 = -a1 a2, so with
    # weights (p, 1 - p) J = [[p(1-p), -p(1-p)], [-p(1-p), p(1-p)]]; largest, 1/4, at p = 1/2.
    s = np.array(scores)
    p = own_softmax(s)[0]
    h = 1e-6
    numeric = np.empty((2, 2))
    for j in range(2):
        step = np.zeros(2)
        step[j] = h
        numeric[:, j] = (own_softmax(s + step) - own_softmax(s - step)) / (2 * h)
    expected = p * (1 - p) * np.array([[1.0, -1.0], [-1.0, 1.0]])
    np.testing.assert_allclose(numeric, expected, rtol=0, atol=1e-9)
    assert p * (1 - p) <= 0.25 and (p * (1 - p) == 0.25) == (scores[0] == scores[1])
