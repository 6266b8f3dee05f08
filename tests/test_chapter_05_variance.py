"""Chapter 5's Monte Carlo check, read from the built book.

The chapter prints one line per key width d_k, for example

    d_k=  64  var_unscaled=  63.6819  ratio=0.9950  var_scaled=0.9950

The expected values come from the derivation, not from the chapter's code: with
independent components of mean 0 and variance 1, Var(q.k) = d_k and
Var(q.k / sqrt(d_k)) = 1.

Why 5% is a safe tolerance: the chapter draws N = 100 000 pairs per width. For
standard normal components E[S^4] = 3 d_k^2 + 6 d_k, so the sample variance has
relative standard error sqrt((2 + 6/d_k) / N), at most sqrt(8 / N) = 0.9% (at
d_k = 1). 5% is therefore about 5.6 standard errors or more at every width: a correct
simulation fails this test with probability below one in a million (normal
approximation: about 2e-8 per width), and the chapter's seed is fixed anyway.

Run ``./course build`` (or ``./course test``, which builds first) before this test.
"""

import html
import re

import pytest
from built_book import built_page

CHAPTER = "chapters/05_why_divide_by_sqrt_dk.html"
TOLERANCE = 0.05

LINE = re.compile(
    r"d_k=\s*(?P<d_k>\d+)\s+var_unscaled=\s*(?P<unscaled>[-+0-9.eE]+)"
    r"\s+ratio=\s*(?P<ratio>[-+0-9.eE]+)\s+var_scaled=\s*(?P<scaled>[-+0-9.eE]+)"
)


@pytest.fixture(scope="module")
def variances() -> dict[int, tuple[float, float, float]]:
    """{d_k: (var_unscaled, ratio, var_scaled)} as printed in the built chapter."""
    text = html.unescape(built_page(CHAPTER))
    found: dict[int, tuple[float, float, float]] = {}
    for m in LINE.finditer(text):
        d_k = int(m["d_k"])
        row = (float(m["unscaled"]), float(m["ratio"]), float(m["scaled"]))
        if d_k in found and found[d_k] != row:
            pytest.fail(f"chapter 5 prints two different results for d_k={d_k}: {found[d_k]} and {row}")
        found[d_k] = row
    if not found:
        pytest.fail(
            f"no Monte Carlo result lines ('d_k=... var_unscaled=... ratio=... var_scaled=...') "
            f"found in {CHAPTER}; did the chapter's output format change?"
        )
    return found


def test_chapter_5_reports_a_wide_range_of_key_widths(variances):
    widths = sorted(variances)
    assert len(widths) >= 8, f"expected at least 8 key widths, found {widths}"
    assert widths[0] == 1 and widths[-1] >= 256, f"widths should run from 1 to at least 256, found {widths}"


def test_printed_ratio_is_the_unscaled_variance_over_d_k(variances):
    # Guards the parsing: the three numbers on a line must be consistent.
    for d_k, (unscaled, ratio, _) in variances.items():
        assert ratio == pytest.approx(unscaled / d_k, rel=2e-3), f"d_k={d_k}: ratio {ratio} != {unscaled}/{d_k}"


def test_unscaled_variance_is_within_5_percent_of_d_k(variances):
    bad = {d: v for d, (v, _, _) in variances.items() if abs(v / d - 1) > TOLERANCE}
    assert not bad, "Var(q.k) should be d_k within 5%; off at " + ", ".join(
        f"d_k={d}: {v:.4f} ({100 * (v / d - 1):+.1f}%)" for d, v in sorted(bad.items())
    )


def test_scaled_variance_is_within_5_percent_of_1(variances):
    bad = {d: s for d, (_, _, s) in variances.items() if abs(s - 1) > TOLERANCE}
    assert not bad, "Var(q.k / sqrt(d_k)) should be 1 within 5%; off at " + ", ".join(
        f"d_k={d}: {s:.4f} ({100 * (s - 1):+.1f}%)" for d, s in sorted(bad.items())
    )


def test_summary_claim_within_2_percent(variances):
    # Summary: "A simulation with 100 000 pairs per width agrees with both statements to within 2%."
    for d_k, (unscaled, _, scaled) in variances.items():
        assert abs(unscaled / d_k - 1) < 0.02 and abs(scaled - 1) < 0.02, d_k


def test_alt_text_ratios_between_0_99_and_1_02(variances):
    ratios = [r for _, r, _ in variances.values()]
    assert 0.985 <= min(ratios) and max(ratios) <= 1.02, ratios


def test_largest_printed_mean_is_within_noise():
    text = html.unescape(built_page(CHAPTER))
    m = re.search(r"largest \|mean\| of the unscaled scores: ([0-9.]+)", text)
    assert m, "the line with the largest |mean| is missing"
    # The mean of N scores of variance d_k has standard error sqrt(d_k / N); the
    # largest over ten widths stays within 4 standard errors of the widest.
    assert float(m[1]) < 4 * (512 / 100_000) ** 0.5


def test_optional_note_standard_error_numbers():
    from math import erfc, sqrt

    assert round(0.05 / sqrt(8 / 100_000), 1) == 5.6  # "about 5.6 standard errors"
    assert round(0.05 / sqrt(8 / 20_000), 1) == 2.5  # "only 2.5 standard errors"
    two_sided = erfc(2.5 / sqrt(2))  # P(|Z| > 2.5)
    assert 70 < 1 / two_sided < 90  # "about once in eighty runs"


def test_what_happened_says_about_two_percent(variances):
    # "The printed variances are within about 2% of both": the largest deviation
    # is above 1% (so "a few tenths of a percent" would be false) and below 2%.
    deviations = [abs(u / d - 1) for d, (u, _, _) in variances.items()]
    deviations += [abs(s - 1) for _, _, s in variances.values()]
    assert 0.01 < max(deviations) < 0.02, max(deviations)
