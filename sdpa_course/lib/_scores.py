"""The work on checked scores that the reference and the blocked attention share.

The scores are ``S = (Q * scale) K^T``: one number per query and key. These
functions compute them, refuse them when they overflow, mask them and turn
them into softmax weights. Their arguments are already checked (see
:mod:`lib._checks`), so they do no checking of their own.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "apply_mask",
    "check_no_overflow",
    "overflow_error",
    "scaled_scores_of_checked",
    "softmax_of_checked",
]


def scaled_scores_of_checked(qa: np.ndarray, ka: np.ndarray, factor: float) -> np.ndarray:
    """``(qa * factor) @ ka^T`` as a fresh array, or a clear error if it overflows.

    Scaling the ``n_q x d_k`` queries gives the same scores as scaling the
    ``n_q x n_k`` scores (up to rounding) and saves a pass over the largest
    array.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        scores: np.ndarray = (qa * factor) @ np.swapaxes(ka, -1, -2)
    check_no_overflow(scores, qa.shape, ka.shape)
    return scores


def check_no_overflow(scores: np.ndarray, q_shape: tuple[int, ...], k_shape: tuple[int, ...]) -> None:
    """Raise :func:`overflow_error` if ``scores`` (all of them, or one tile)
    hold an inf or a NaN; ``q_shape`` and ``k_shape`` are those of the whole
    q and k, for the message."""
    # min and max see any inf or NaN without building a boolean array as
    # large as the scores (the scores can be the biggest array in memory).
    if scores.size and not (np.isfinite(scores.min()) and np.isfinite(scores.max())):
        raise overflow_error(scores.dtype, q_shape, k_shape)


def overflow_error(dtype: np.dtype, q_shape: tuple[int, ...], k_shape: tuple[int, ...]) -> ValueError:
    """The error for scores that overflow, naming the shapes of q and k."""
    return ValueError(
        "the scores q.k * scale overflow the floating-point range of "
        f"{dtype}; rescale q and k (q has shape {q_shape}, k has shape {k_shape})"
    )


def apply_mask(scores: np.ndarray, mask: np.ndarray | None, allowed: np.ndarray | None) -> None:
    """Mask ``scores`` in place: add a float ``mask``, and set -inf where a
    boolean ``mask`` or ``allowed`` (e.g. the causal mask) is False.

    Both masks are already checked and broadcast to the shape of ``scores``.
    """
    if mask is not None:
        if mask.dtype == np.bool_:
            allowed = mask if allowed is None else (allowed & mask)
        else:
            scores += mask.astype(scores.dtype, copy=False)
    if allowed is not None:
        np.copyto(scores, np.array(-np.inf, dtype=scores.dtype), where=~allowed)


def softmax_of_checked(arr: np.ndarray, axis: int, *, overwrite: bool) -> np.ndarray:
    """The work of :func:`lib.softmax` on a float array already known to be valid.

    With ``overwrite=True`` the weights are written into ``arr`` itself (its
    caller owns it, e.g. a fresh score matrix), which saves allocating a
    second array of the same size. Every step after the subtraction works in
    place for the same reason.
    """
    if arr.shape[axis] == 0:
        return arr if overwrite else arr.copy()
    shift = np.max(arr, axis=axis, keepdims=True)
    # A slice made only of -inf has no finite maximum; shifting it by 0 makes
    # every exp exactly 0 instead of exp(-inf - -inf) = NaN.
    shift[np.isneginf(shift)] = 0
    weights: np.ndarray = np.subtract(arr, shift, out=arr if overwrite else None)
    np.exp(weights, out=weights)
    total = weights.sum(axis=axis, keepdims=True)
    # Only a slice of -inf sums to 0 (elsewhere the maximum contributes
    # exp(0) = 1); its weights are all 0 and stay 0 when divided by 1.
    total[total == 0] = 1
    weights /= total
    return weights
