"""How far a right answer may be from lib's, derived from the dtype and the size of the numbers."""

from __future__ import annotations

import numpy as np

from ..compare import RTOL


def logit_rtol(dtype: np.dtype, logit_bound: float, terms: int = 1) -> float:
    """Relative tolerance for weights computed from logits as large as ``logit_bound``.

    Derivation (u = eps / 2 is the unit roundoff of the dtype, B the largest
    |logit|, t the length of the dot products that made the logits). Every
    sound way of computing a softmax (shift by the row maximum, subtract a
    log-sum-exp, work in float64 and round at the end, loop or einsum) makes
    each weight ``exp(z_j - c) / S`` with

    - the logits themselves rounded by up to ``t u B`` (a dot product of t
      terms, in another order than lib's);
    - ``z_j - c`` rounded by up to ``u (|z_j| + |c|) <= 2 u B`` (``c`` is the
      maximum or the log-sum-exp, itself of size up to B + log n and rounded
      by ``u B``);
    - ``exp`` adding a relative error of that size plus ``u``; the sum S and
      the division another ``n u`` and ``u`` (``n u`` is covered by the row-sum
      tolerance of :func:`check_weight_rows`).

    So a weight is off by at most about ``(3 + t) u B + 3 u`` relative, i.e.
    ``2 eps (1 + B)(1 + t)``; the tolerance takes twice that,
    ``4 eps (1 + B)(1 + t)``, on top of the dtype's base tolerance
    (:data:`~grading.compare.RTOL`). A wrong softmax (wrong axis, no scale,
    mask after the softmax) is off by far more. It does not depend on lib's
    own rounding: lib is one of the sound methods, off by the same bound.
    """
    dtype = np.dtype(dtype)
    eps = float(np.finfo(dtype).eps) if dtype.kind == "f" else float(np.finfo(np.float64).eps)
    return RTOL.get(dtype.name, RTOL["float64"]) + 4 * eps * (1.0 + logit_bound) * (1 + terms)


def attention_rtol(q: np.ndarray, k: np.ndarray, scale: float | None = None) -> float:
    """:func:`logit_rtol` for the scores ``q . k * scale`` (bounded by Cauchy-Schwarz)."""
    d_k = q.shape[-1]
    scale = 1.0 / np.sqrt(d_k) if scale is None else scale
    qn = float(np.linalg.norm(q.astype(np.float64), axis=-1).max(initial=0.0))
    kn = float(np.linalg.norm(k.astype(np.float64), axis=-1).max(initial=0.0))
    return logit_rtol(np.result_type(q, k), scale * qn * kn, terms=d_k)


def row_sum_tol(dtype: np.dtype, rtol: float | None, n: int) -> float:
    """How far from 1 the sum of a row of n weights may be.

    Each weight is within ``rtol`` (relative) of the exact one, so their sum
    is within ``rtol`` of 1; adding n numbers in floating point adds up to
    ``n eps`` more (any order of summation). Hence ``rtol + n eps``: the
    same bound as the weights, never a fixed number (a fixed 1e-4 would fail a
    correct ``exp(z - logsumexp(z))`` in float32 at logits of 1e4, whose rows
    sum to 1 +- 3e-4).
    """
    dtype = np.dtype(dtype)
    eps = float(np.finfo(dtype).eps) if dtype.kind == "f" else float(np.finfo(np.float64).eps)
    base = RTOL.get(dtype.name, RTOL["float64"]) if rtol is None else rtol
    return base + (n + 2) * eps
