"""Learned projections: queries, keys and values from token vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_float_array, same_width, weight_matrix

__all__ = ["project_qkv"]


def project_qkv(x: Any, w_q: Any, w_k: Any, w_v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries, keys and values ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V``.

    Row i of ``X`` is token i, so row i of the results is ``q_i = x_i W_Q``,
    ``k_i = x_i W_K`` and ``v_i = x_i W_V``.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
        The token vectors, one per row.
    w_q, w_k : array_like, shape (d_model, d_k)
        Query and key projections; they must share the width d_k, since every
        query is compared with every key by a dot product.
    w_v : array_like, shape (d_model, d_v)
        Value projection.

    Returns
    -------
    (q, k, v) : tuple of numpy.ndarray
        Shapes (..., n, d_k), (..., n, d_k) and (..., n, d_v).

    Examples
    --------
    >>> x = np.array([[1.0, 2.0]])
    >>> q, k, v = project_qkv(x, np.eye(2), 2 * np.eye(2), np.ones((2, 1)))
    >>> q, k, v
    (array([[1., 2.]]), array([[2., 4.]]), array([[3.]]))
    """
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n, d_model)")
    wq, wk, wv = (weight_matrix(w, name, xa.shape) for w, name in ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v")))
    same_width(wq, wk, "d_k")
    return xa @ wq, xa @ wk, xa @ wv
