"""Raw dot-product scores: the first, unlearned way to compare tokens."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_float_array, broadcast_batch

__all__ = ["dot_product_scores"]


def dot_product_scores(x: Any, y: Any | None = None) -> np.ndarray:
    """Score matrix ``e[i, j] = x_i . y_j`` of raw dot products.

    With ``y`` left out, every token is compared with every token of the same
    sequence, ``e_ij = x_i x_j^T``: the same vector plays both roles, so the
    matrix is symmetric.

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        One row per token (row i is token i).
    y : array_like, shape (..., m, d), optional
        The tokens compared against; defaults to ``x``.

    Returns
    -------
    numpy.ndarray, shape (..., n, m)
        Row i holds the scores of token i against every token j.

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [1.0, 1.0]])
    >>> dot_product_scores(x)
    array([[1., 1.],
           [1., 2.]])
    """
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n, d)")
    ya = xa if y is None else as_float_array(y, "y", min_ndim=2, layout="(..., m, d)")
    if xa.shape[-1] != ya.shape[-1]:
        raise ValueError(f"x and y must have the same vector width d: x has shape {xa.shape}, y has shape {ya.shape}")
    broadcast_batch({"x": xa, "y": ya})
    scores: np.ndarray = xa @ np.swapaxes(ya, -1, -2)
    return scores
