"""A numerically stable softmax."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_float_array
from ._scores import softmax_of_checked

__all__ = ["softmax", "softmax_jacobian"]


def softmax(x: Any, axis: int = -1) -> np.ndarray:
    """Softmax of ``x`` along ``axis``, computed stably.

    Each slice along ``axis`` is shifted by its maximum before ``exp``, which
    leaves the result unchanged (softmax ignores a constant added to every
    entry) and keeps every exponent at or below 0, so nothing overflows.
    Entries of ``-inf`` get weight exactly 0; a slice made only of ``-inf``
    gets all-zero weights (a query with nothing it may attend to).

    Parameters
    ----------
    x : array_like of real numbers
        The logits. ``-inf`` is allowed; NaN and ``+inf`` are not.
    axis : int
        The axis along which the weights sum to one.

    Returns
    -------
    numpy.ndarray
        Same shape as ``x``; float32 input stays float32, integers become float64.

    Examples
    --------
    >>> softmax([0.0, 0.0])
    array([0.5, 0.5])
    >>> softmax([1000.0, 0.0])          # no overflow
    array([1., 0.])
    >>> softmax([[0.0, -np.inf], [-np.inf, -np.inf]])
    array([[1., 0.],
           [0., 0.]])
    """
    arr = as_float_array(x, "x", allow_neg_inf=True)
    if arr.ndim == 0:
        raise ValueError("x must have at least one dimension to take a softmax over; got shape ()")
    return softmax_of_checked(arr, axis, overwrite=False)


def softmax_jacobian(weights: Any) -> np.ndarray:
    """Jacobian of the softmax, written with its own output ``a = softmax(s)``.

    Differentiating ``a_i = exp(s_i) / sum_l exp(s_l)`` with respect to
    ``s_j`` gives ``J_ij = a_i (delta_ij - a_j)``, that is
    ``J = diag(a) - a^T a`` for the row ``a``. The softmax runs along the
    last axis; leading axes are a batch, so ``weights`` of shape (..., n)
    gives (..., n, n). Entry ``[..., i, j]`` is how fast weight i moves when
    score j moves.

    Parameters
    ----------
    weights : array_like, shape (..., n)
        Softmax weights (each row non-negative and summing to one, as
        :func:`softmax` returns them). Rows are not renormalised here.

    Returns
    -------
    numpy.ndarray, shape (..., n, n)

    Examples
    --------
    >>> softmax_jacobian([0.5, 0.5])
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    >>> softmax_jacobian([1.0, 0.0])     # a saturated softmax lets nothing through
    array([[0., 0.],
           [0., 0.]])
    >>> softmax_jacobian(np.full((2, 3, 4), 0.25)).shape
    (2, 3, 4, 4)
    """
    a = as_float_array(weights, "weights", min_ndim=1, layout="(..., n)")
    column = a[..., :, None]
    jacobian: np.ndarray = column * np.eye(a.shape[-1], dtype=a.dtype) - column * a[..., None, :]
    return jacobian
