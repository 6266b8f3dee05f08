r"""Homework 5: the sqrt(d_k) experiment, estimating Var(q . k) by sampling.

Learner functions, both drawing from the generator ``rng`` they are given:

- ``sample_scores(d_k, n_samples, rng)``: ``n_samples`` scores ``S = q . k``,
  each from fresh q and k of ``d_k`` independent standard normal components;
  a 1-D float array.
- ``estimate_score_variance(d_k, n_samples, rng)``: ``(var_unscaled,
  var_scaled)``, the sample variances of S and of ``S / sqrt(d_k)`` over
  ``n_samples`` draws. In theory they are d_k and 1.

Statistical tolerances, and the false-failure rate they were designed for
-------------------------------------------------------------------------
With q, k ~ N(0, I_d), S = sum_r q_r k_r has mean 0 and variance d; each
product q_r k_r has E[(q_r k_r)^2] = 1 and E[(q_r k_r)^4] = 9, so
E[S^4] = 9d + 3d(d - 1) = 3d^2 + 6d and Var(S^2) = 2d^2 + 6d. Over n draws:

- the sample mean of S has standard deviation sqrt(d / n);
- the sample variance V (with or without subtracting the mean, ddof 0 or 1:
  these differ by O(d / n), negligible here) has standard deviation
  sigma_V = sqrt((2d^2 + 6d) / n), and V / d (the scaled variance) has
  sqrt((2 + 6 / d) / n).

Every statistical comparison accepts a deviation of up to Z = 7 of these
standard deviations, so a correct solution fails one only if its estimate is
7 standard deviations out. By the normal approximation that has probability
2 * (1 - Phi(7)) = 2.6e-12. The approximation is least accurate for V at
d = 1, where S^2 = (q k)^2 is skewed: its skewness is
E[(S^2 - 1)^3] / 8^1.5 = 200 / 22.6 = 8.8, so the mean of n = 20 000 draws
has skewness 8.8 / sqrt(n) = 0.062. Cramer's correction multiplies the upper
tail by exp(Z^3 * 0.062 / 6) = 35, giving 35 * 1.3e-12 = 4.5e-11 (the
kurtosis term, 7^4 * (156 / n - 3 * 0.062^2) / 24 = -0.4, only lowers it).
A single huge draw is no threat: to push V up by 7 sigma_V alone it needs
(q k)^2 > 7 * sqrt(8 n) = 2800, i.e. |q k| > 53, probability about e^-53
per draw, below 1e-19 over all n draws.

One run of all four checks makes 36 such comparisons (two per case: the
mean and variance of the scores, or the unscaled and scaled variance;
6 + 10 in the score checks, 6 + 14 in the variance checks), so
the false-failure rate is at most 36 * 4.5e-11 = 1.6e-9 per run. The
target is < 1e-6, leaving a factor of 600 for the approximations.
``tests/test_homework_grading.py`` checks the standard deviations above
against simulation.

The exact checks (the same generator seed gives the same result, different
seeds different results) fail a correct solution only if two independent
estimates from continuous samples agree to the last bit: probability 0 for
practical purposes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .authoring import HINTS, judge_each, unpack
from .check import Assignment, Cases
from .compare import Mismatch, Partial
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case, rng_arg

A = Assignment("hw5_sqrt_dk_experiment", chapter="chapters/05_why_divide_by_sqrt_dk.md")

#: Standard deviations that a correct estimate may stray; see the module docstring.
Z = 7.0
N_SCORES = 20_000
N_VARIANCE = 50_000


def _seeds(seed: int, count: int) -> list[int]:
    return [int(s) for s in np.random.default_rng([int(seed) & 0x7FFFFFFF, 5]).integers(0, 2**31, size=count)]


def _score_cases(d_ks: tuple[int, ...], n: int) -> Cases:
    def cases(seed: int) -> list[Case]:
        seeds = _seeds(seed, len(d_ks) + 1)
        out = []
        for d_k, s in zip(d_ks, seeds):
            out.append(make_case("sample_scores", d_k, n, rng_arg(s), label=f"d_k = {d_k}, n_samples = {n}, seed {s}"))
        # the same seed again (must repeat exactly) and another seed (must differ)
        out.append(make_case("sample_scores", d_ks[0], n, rng_arg(seeds[0]), label=f"d_k = {d_ks[0]}, same seed again"))
        out.append(make_case("sample_scores", d_ks[0], n, rng_arg(seeds[-1]), label=f"d_k = {d_ks[0]}, another seed"))
        return out

    return cases


def _variance_cases(d_ks: tuple[int, ...], n: int) -> Cases:
    def cases(seed: int) -> list[Case]:
        seeds = _seeds(seed, len(d_ks) + 1)
        out = [
            make_case("estimate_score_variance", d, n, rng_arg(s), label=f"d_k = {d}, n_samples = {n}, seed {s}")
            for d, s in zip(d_ks, seeds)
        ]
        out.append(
            make_case(
                "estimate_score_variance", d_ks[0], n, rng_arg(seeds[0]), label=f"d_k = {d_ks[0]}, same seed again"
            )
        )
        out.append(
            make_case("estimate_score_variance", d_ks[0], n, rng_arg(seeds[-1]), label=f"d_k = {d_ks[0]}, another seed")
        )
        return out

    return cases


def _within(name: str, value: float, expected: float, sd: float) -> None:
    if not math.isfinite(value):
        raise Mismatch(f"{name} is {value}; expected about {expected:g}")
    z = (value - expected) / sd
    if abs(z) > Z:
        raise Mismatch(
            f"{name} is {value:.5g}; expected {expected:g} give or take {sd:.2g} (one standard deviation "
            f"of the estimate); it is {abs(z):.0f} standard deviations off"
        )


def _real(value: Any, what: str) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise Mismatch(f"{what} is {_kind(value)}; expected a number")


def _kind(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape}"
    return f"a {type(value).__name__}"


def _judge_repeat(values: list[Any], name: str) -> None:
    """The two reproducibility cases (same seed again, another seed) are their
    own share: the estimates may be right while the generator is ignored."""
    first, again, other = values[0], values[-2], values[-1]
    share = 1 - 1 / len(values)  # one case of the check's worth
    if not np.array_equal(first, again):
        raise Partial(
            f"{name} gave different results for two generators made from the same seed: draw "
            f"every random number from rng (e.g. rng.standard_normal), {HINTS['global_rng']}",
            share,
        )
    if np.array_equal(first, other):
        # Not sampling at all (a constant answer): nothing of the experiment is done.
        raise Mismatch(
            f"{name} gave the same result for generators of different seeds: compute it from "
            "random samples drawn from rng"
        )


def _judge_scores(cases: list[Case], results: list[ResultRecord]) -> str:
    values = []

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        d_k, n, _ = args
        if not isinstance(got, np.ndarray) or got.dtype.kind != "f":
            raise Mismatch(f"{name} returned {_kind(got)}; expected a 1-D float numpy array")
        if got.shape != (n,):
            raise Mismatch(f"{name} returned shape {got.shape}; expected ({n},), one score per sample")
        if not np.isfinite(got).all():
            raise Mismatch(f"{name} returned NaN or infinite scores")
        values.append(got)
        x = got.astype(np.float64)
        _within("the mean of the scores", float(x.mean()), 0.0, math.sqrt(d_k / n))
        _within("the variance of the scores", float(x.var()), float(d_k), math.sqrt((2 * d_k**2 + 6 * d_k) / n))

    count = judge_each(cases, results, one)
    _judge_repeat(values, "sample_scores")
    return f"{count} cases: the scores have mean about 0 and variance about d_k, and repeat with the seed"


def _judge_variance(cases: list[Case], results: list[ResultRecord]) -> str:
    values = []

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        d_k, n, _ = args
        raw, scaled = unpack(got, ("var_unscaled", "var_scaled"), name)
        raw, scaled = _real(raw, f"{name}: var_unscaled"), _real(scaled, f"{name}: var_scaled")
        values.append(np.array([raw, scaled]))
        _within(f"var_unscaled for d_k = {d_k}", raw, float(d_k), math.sqrt((2 * d_k**2 + 6 * d_k) / n))
        try:
            _within(f"var_scaled for d_k = {d_k}", scaled, 1.0, math.sqrt((2 + 6 / d_k) / n))
        except Mismatch as exc:
            if d_k > 1 and abs(scaled * d_k - 1) < 0.2:
                raise Mismatch(f"{exc}. Hint: {HINTS['variance_scaled_by_dk']}; scale by 1 / sqrt(d_k)") from None
            raise

    count = judge_each(cases, results, one)
    _judge_repeat(values, "estimate_score_variance")
    return f"{count} cases: the estimates are about d_k (unscaled) and 1 (scaled), and repeat with the seed"


A.add(
    "sample_scores",
    ["sample_scores"],
    points=2,
    cases=_score_cases((16,), N_SCORES),
    judge=_judge_scores,
    description="20 000 scores for d_k = 16: shape, mean about 0, variance about 16, reproducible",
    rules=(),  # the inputs are a generator and sizes: no array to change, no dtype to keep
)
A.add(
    "sample_scores_hidden",
    ["sample_scores"],
    points=2,
    cases=_score_cases((1, 4, 64), N_SCORES),
    judge=_judge_scores,
    description="d_k = 1, 4 and 64: mean and variance within 7 standard deviations",
    rules=(),  # the inputs are a generator and sizes: no array to change, no dtype to keep
)
A.add(
    "score_variance",
    ["estimate_score_variance"],
    points=2,
    cases=_variance_cases((16,), N_VARIANCE),
    judge=_judge_variance,
    description="d_k = 16: about 16 unscaled and 1 scaled, reproducible",
    rules=(),  # the inputs are a generator and sizes: no array to change, no dtype to keep
)
A.add(
    "score_variance_hidden",
    ["estimate_score_variance"],
    points=4,
    cases=_variance_cases((1, 2, 9, 25, 64), N_VARIANCE),
    judge=_judge_variance,
    description="d_k from 1 to 64: both estimates within 7 standard deviations",
    rules=(),  # the inputs are a generator and sizes: no array to change, no dtype to keep
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_sample_scores = notebook_check(A, "sample_scores")
check_score_variance = notebook_check(A, "score_variance")
check_before_submit = before_submit_check(A)
