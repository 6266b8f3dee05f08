"""The reference attention's float32 accuracy, against the plain float32 computation.

An independent float64 computation (tests/naive.py's loops, on the float32
inputs converted exactly) is the truth. The plain float32 computation is the
one PyTorch's math path writes: scale q, q @ k^T, add the mask, subtract each
row's maximum, exp, normalise, @ v, every step in float32. On random masked
cases (boolean and float masks, causal, rows with no permitted key) the
reference's float32 error stays within 4 times the plain computation's.

Each case's error is the largest absolute error of an output, in units of
max|v| (the size of the outputs, which are averages of rows of v). No float32
computation can promise less than one rounding at that size, float32's eps:
the plain error is floored there, so that a case where the plain computation
happens to be exact does not demand exactness of the reference.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sdpa_course import lib
from tests.naive import naive_attention

CASES = 300
EPS32 = float(np.finfo(np.float32).eps)
MASK_KINDS = ("none", "bool", "float", "causal", "bool+causal", "float+causal")


def random_case(rng: np.random.Generator, kind: str) -> dict:
    """Small float32 q, k, v of random sizes and magnitudes, and a mask of ``kind``."""
    n_q, n_k = int(rng.integers(1, 13)), int(rng.integers(1, 13))
    d_k, d_v = int(rng.integers(1, 17)), int(rng.integers(1, 9))
    size = math.exp(rng.uniform(-1.0, 1.5))  # scores from nearly uniform to nearly one-hot weights
    q = (rng.standard_normal((n_q, d_k)) * size).astype(np.float32)
    k = (rng.standard_normal((n_k, d_k)) * size).astype(np.float32)
    v = rng.standard_normal((n_k, d_v)).astype(np.float32)
    mask = None
    if kind.startswith("bool"):
        mask = rng.random((n_q, n_k)) < 0.7
        mask[rng.random(n_q) < 0.15] = False  # some queries may attend to no key
    elif kind.startswith("float"):
        mask = (rng.standard_normal((n_q, n_k)) * 3).astype(np.float32)
        mask[rng.random((n_q, n_k)) < 0.2] = -np.inf
        mask[rng.random(n_q) < 0.15] = -np.inf
    return {"q": q, "k": k, "v": v, "mask": mask, "is_causal": kind.endswith("causal")}


def allowed_pairs(case: dict) -> np.ndarray:
    n_q, n_k = case["q"].shape[0], case["k"].shape[0]
    allowed = np.ones((n_q, n_k), dtype=bool)
    if case["is_causal"]:
        allowed &= np.tri(n_q, n_k, dtype=bool)
    if case["mask"] is not None and case["mask"].dtype == np.bool_:
        allowed &= case["mask"]
    return allowed


def truth(case: dict) -> np.ndarray:
    """The float64 output, from plain loops (exact conversions of the float32 inputs)."""
    mask = case["mask"]
    added = None if mask is None or mask.dtype == np.bool_ else mask.astype(np.float64).tolist()
    out, _ = naive_attention(
        case["q"].astype(np.float64).tolist(),
        case["k"].astype(np.float64).tolist(),
        case["v"].astype(np.float64).tolist(),
        allowed=allowed_pairs(case).tolist(),
        added=added,
    )
    return np.array(out, dtype=np.float64)


def plain_float32(case: dict) -> np.ndarray:
    """PyTorch's math path, step by step, in float32."""
    q, k, v, mask = case["q"], case["k"], case["v"], case["mask"]
    s = (q * np.float32(1 / math.sqrt(q.shape[-1]))) @ k.T
    if mask is not None and mask.dtype != np.bool_:
        s = s + mask
    s[~allowed_pairs(case)] = -np.inf
    top = s.max(axis=-1, keepdims=True)
    top[np.isneginf(top)] = 0
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    total[total == 0] = 1
    return (e / total) @ v


def error(out: np.ndarray, exact: np.ndarray, v: np.ndarray) -> float:
    """Largest absolute error, in units of max|v|."""
    return float(np.abs(out.astype(np.float64) - exact).max()) / max(float(np.abs(v).max()), 1e-30)


def errors(seed: int) -> list[tuple[str, float, float]]:
    """(mask kind, reference's error, plain float32 error) for CASES random cases."""
    rng = np.random.default_rng(seed)
    found = []
    for i in range(CASES):
        kind = MASK_KINDS[i % len(MASK_KINDS)]
        case = random_case(rng, kind)
        exact = truth(case)
        out = lib.scaled_dot_product_attention(
            case["q"], case["k"], case["v"], case["mask"], is_causal=case["is_causal"]
        )
        assert out.dtype == np.float32
        found.append((kind, error(out, exact, case["v"]), error(plain_float32(case), exact, case["v"])))
    return found


@pytest.mark.parametrize("seed", [0, 1])
def test_the_reference_is_as_accurate_as_the_plain_float32_computation(seed):
    for kind, ours, plain in errors(seed):
        assert ours <= 4 * max(plain, EPS32), (kind, ours, plain)


def test_the_float32_errors_are_float32_roundings():
    """Both computations are float32-accurate (within 64 eps of the output's size),
    so the comparison above compares two float32 errors, not two failures."""
    found = errors(2)
    assert max(ours for _, ours, _ in found) <= 64 * EPS32
    assert max(plain for _, _, plain in found) <= 64 * EPS32
