"""Input checks shared by every public function of :mod:`lib`.

Each check turns one argument into what the computation needs (a float
array, an integer, a scale) or raises an error whose message names the
argument, what was expected and what arrived. Every module of :mod:`lib`
takes its checks from here, so one kind of argument is checked one way.
"""

from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "Scores",
    "as_float_array",
    "as_int",
    "broadcast_batch",
    "check_attention",
    "check_mask",
    "check_qk",
    "check_scale",
    "check_scores",
    "check_v",
    "same_width",
    "weight_matrix",
]


def as_float_array(
    x: Any, name: str, *, min_ndim: int = 0, layout: str = "", allow_neg_inf: bool = False
) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a clear error.

    Integers become float64; float16, float32 and float64 keep their dtype.
    ``layout`` describes the expected shape, e.g. ``"(..., n_q, d_k)"``.
    """
    arr = np.asarray(x)
    if arr.dtype == np.bool_:
        raise TypeError(f"{name} must hold real numbers, not booleans (a boolean array is a mask); got dtype bool")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        expected = layout or f"at least {min_ndim} dimensions"
        raise ValueError(f"{name} must have shape {expected} (at least {min_ndim} dimensions); got shape {arr.shape}")
    bad = np.isnan(arr) | (np.isinf(arr) if not allow_neg_inf else np.isposinf(arr))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN or +inf" if allow_neg_inf else "NaN or inf"
        raise ValueError(
            f"{name} must be finite; it holds {int(bad.sum())} {what} value(s), "
            f"the first at index {first} (shape {arr.shape})"
        )
    return arr


def as_int(value: Any, name: str, *, minimum: int) -> int:
    """Return ``value`` as an int of at least ``minimum``, or raise a clear error.

    Python and numpy integers pass; floats (even ``2.0``) and strings do not.

    >>> as_int(np.int64(3), "n_heads", minimum=1)
    3
    >>> as_int(2.5, "block_size", minimum=1)
    Traceback (most recent call last):
    ...
    TypeError: block_size must be an integer; got float 2.5
    """
    try:
        number = operator.index(value)  # accepts int and numpy integers, not floats
    except TypeError:
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be {minimum} or more; got {number}")
    return number


def broadcast_batch(named: dict[str, np.ndarray], core: int = 2) -> tuple[int, ...]:
    """Broadcast the leading (batch/head) dimensions of several arrays.

    ``core`` trailing dimensions of each array are not batch dimensions.
    """
    try:
        return np.broadcast_shapes(*(a.shape[: a.ndim - core] for a in named.values()))
    except ValueError:
        shapes = ", ".join(f"{n} has shape {a.shape}" for n, a in named.items())
        raise ValueError(f"the leading (batch) dimensions do not broadcast: {shapes}") from None


def check_mask(mask: Any, scores_shape: tuple[int, ...]) -> np.ndarray:
    """Check that ``mask`` is boolean or real and broadcasts to the scores."""
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        arr = as_float_array(arr, "mask", allow_neg_inf=True)
    try:
        fits = np.broadcast_shapes(arr.shape, scores_shape) == tuple(scores_shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask of shape {arr.shape} does not broadcast to the scores' shape {tuple(scores_shape)} (..., n_q, n_k)"
        )
    return arr


def check_qk(q: Any, k: Any) -> tuple[np.ndarray, np.ndarray]:
    """Check queries and keys: float arrays of shape (..., n, d_k) with one d_k."""
    qa = as_float_array(q, "q", min_ndim=2, layout="(..., n_q, d_k)")
    ka = as_float_array(k, "k", min_ndim=2, layout="(..., n_k, d_k)")
    if qa.shape[-1] != ka.shape[-1]:
        raise ValueError(
            f"d_k of q ({qa.shape[-1]}) must equal d_k of k ({ka.shape[-1]}): "
            f"q has shape {qa.shape} (..., n_q, d_k), k has shape {ka.shape} (..., n_k, d_k)"
        )
    return qa, ka


def check_v(v: Any, qa: np.ndarray, ka: np.ndarray) -> np.ndarray:
    """Check that ``v`` has one row per key and a batch shape that fits q and k."""
    va = as_float_array(v, "v", min_ndim=2, layout="(..., n_k, d_v)")
    n_k = ka.shape[-2]
    if va.shape[-2] != n_k:
        raise ValueError(
            f"n_k of k ({n_k}) must equal n_k of v ({va.shape[-2]}): k has shape "
            f"{ka.shape} (..., n_k, d_k), v has shape {va.shape} (..., n_k, d_v)"
        )
    broadcast_batch({"q": qa, "k": ka, "v": va})
    return va


def check_scale(scale: float | None, d_k: int) -> float:
    """The factor that multiplies the scores: ``scale``, or ``1/sqrt(d_k)`` for None."""
    if scale is None:
        return 1.0 / math.sqrt(d_k) if d_k > 0 else 1.0
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.number)):
        raise TypeError(f"scale must be a real number or None; got {type(scale).__name__} {scale!r}")
    if not math.isfinite(float(scale)):
        raise ValueError(f"scale must be finite; got {scale!r}")
    return float(scale)


class Scores(NamedTuple):
    """The checked arguments of the scores ``Q K^T * scale`` and their mask."""

    q: np.ndarray
    k: np.ndarray
    mask: np.ndarray | None  # broadcasts to (*batch, n_q, n_k)
    factor: float
    batch: tuple[int, ...]  # the leading dimensions of q and k, broadcast


def check_scores(q: Any, k: Any, mask: Any | None, scale: float | None) -> Scores:
    """Check what the scores are made of: q and k, their batch dimensions, the scale, the mask."""
    qa, ka = check_qk(q, k)
    batch = broadcast_batch({"q": qa, "k": ka})
    factor = check_scale(scale, qa.shape[-1])
    checked_mask = None if mask is None else check_mask(mask, (*batch, qa.shape[-2], ka.shape[-2]))
    return Scores(qa, ka, checked_mask, factor, batch)


def check_attention(q: Any, k: Any, v: Any, mask: Any | None, scale: float | None) -> tuple[Scores, np.ndarray]:
    """The checks of every attention function, in one order: :func:`check_scores`, then v.

    The reference and blocked attention both start here, so the same bad
    argument gets the same error from both.
    """
    scores = check_scores(q, k, mask, scale)
    return scores, check_v(v, scores.q, scores.k)


def weight_matrix(w: Any, name: str, x_shape: tuple[int, ...]) -> np.ndarray:
    """Check a projection matrix: a float array of shape (d_model, width), d_model
    being the width of the tokens ``x`` (of shape ``x_shape``) that it multiplies."""
    wa = as_float_array(w, name, min_ndim=2, layout="(d_model, width)")
    d_model = x_shape[-1]
    if wa.ndim != 2 or wa.shape[0] != d_model:
        raise ValueError(
            f"{name} must have shape ({d_model}, width), one row per entry of d_model, "
            f"to match x of shape {x_shape}; got shape {wa.shape}"
        )
    return wa


def same_width(w_q: np.ndarray, w_k: np.ndarray, width: str) -> None:
    """Check that W_Q and W_K give queries and keys of one width (``width`` names it)."""
    if w_q.shape[1] != w_k.shape[1]:
        raise ValueError(
            f"w_q and w_k must have the same width {width}: w_q has shape {w_q.shape}, w_k has shape {w_k.shape}"
        )
