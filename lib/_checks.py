"""Input checks shared by every public function of :mod:`lib`.

Each check turns user input into a float array or raises an error whose
message names the argument, what was expected and what arrived.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_float_array", "broadcast_batch", "check_mask", "result_float_dtype"]


def as_float_array(
    x: Any, name: str, *, min_ndim: int = 0, layout: str = "", allow_neg_inf: bool = False
) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a clear error.

    Integers become float64; float16, float32 and float64 keep their dtype.
    ``layout`` describes the expected shape, e.g. ``"(..., n_q, d_k)"``.
    """
    arr = np.asarray(x)
    if arr.dtype == np.bool_:
        raise TypeError(
            f"{name} must hold real numbers, not booleans (a boolean array is a mask); got dtype bool"
        )
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        expected = layout or f"at least {min_ndim} dimensions"
        raise ValueError(
            f"{name} must have shape {expected} (at least {min_ndim} dimensions); "
            f"got shape {arr.shape}"
        )
    bad = np.isnan(arr) | (np.isinf(arr) if not allow_neg_inf else np.isposinf(arr))
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN or +inf" if allow_neg_inf else "NaN or inf"
        raise ValueError(
            f"{name} must be finite; it holds {int(bad.sum())} {what} value(s), "
            f"the first at index {first} (shape {arr.shape})"
        )
    return arr


def result_float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The floating dtype that the inputs combine to (float32 stays float32)."""
    return np.result_type(*arrays)


def broadcast_batch(named: dict[str, np.ndarray], core: int = 2) -> tuple[int, ...]:
    """Broadcast the leading (batch/head) dimensions of several arrays.

    ``core`` trailing dimensions of each array are not batch dimensions.
    """
    try:
        return np.broadcast_shapes(*(a.shape[: a.ndim - core] for a in named.values()))
    except ValueError:
        shapes = ", ".join(f"{n} has shape {a.shape}" for n, a in named.items())
        raise ValueError(
            f"the leading (batch) dimensions do not broadcast: {shapes}"
        ) from None


def check_mask(mask: Any, scores_shape: tuple[int, ...]) -> np.ndarray:
    """Check that ``mask`` is boolean or real and broadcasts to the scores."""
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        arr = as_float_array(arr, "mask", allow_neg_inf=True)
    try:
        np.broadcast_shapes(arr.shape, scores_shape)
        fits = np.broadcast_shapes(arr.shape, scores_shape) == tuple(scores_shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask of shape {arr.shape} does not broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., n_q, n_k)"
        )
    return arr
