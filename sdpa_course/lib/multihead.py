"""Multi-head attention: split into heads, attend, concatenate, project."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_float_array, as_int, same_width, weight_matrix
from .attention import scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "multi_head_attention"]


def split_heads(x: Any, n_heads: int) -> np.ndarray:
    """Split the last axis into heads: (..., n, h*d) -> (..., h, n, d).

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)      # 2 tokens, width 4
    >>> split_heads(x, 2)[1]                 # head 1 holds columns 2 and 3
    array([[2., 3.],
           [6., 7.]])
    """
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n, d_model)")
    h = as_int(n_heads, "n_heads", minimum=1)
    width = xa.shape[-1]
    if width % h:
        raise ValueError(f"n_heads ({h}) must divide the width of x ({width}); x has shape {xa.shape}")
    parts = xa.reshape(*xa.shape[:-1], h, width // h)
    return np.swapaxes(parts, -2, -3)


def merge_heads(x: Any) -> np.ndarray:
    """Concatenate the heads back: (..., h, n, d) -> (..., n, h*d).

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)
    >>> bool((merge_heads(split_heads(x, 2)) == x).all())
    True
    """
    xa = as_float_array(x, "x", min_ndim=3, layout="(..., h, n, d)")
    joined = np.swapaxes(xa, -2, -3)
    return joined.reshape(*joined.shape[:-2], joined.shape[-2] * joined.shape[-1])


def multi_head_attention(
    x: Any,
    w_q: Any,
    w_k: Any,
    w_v: Any,
    w_o: Any,
    n_heads: int,
    *,
    x_kv: Any | None = None,
    mask: Any | None = None,
    is_causal: bool = False,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Multi-head attention.

    ``Q = X W_Q``, ``K = X_kv W_K`` and ``V = X_kv W_V`` are each split into
    ``n_heads`` heads of width d_k = width / n_heads; each head runs
    :func:`~lib.attention.scaled_dot_product_attention` (so its scale is
    1/sqrt(d_k) of the head); the heads' outputs are concatenated and
    projected by ``W_O``.

    Parameters
    ----------
    x : array_like, shape (..., n_q, d_model)
        The tokens that ask (the queries come from them).
    w_q, w_k : array_like, shape (d_model, h * d_k)
    w_v : array_like, shape (d_model, h * d_v)
    w_o : array_like, shape (h * d_v, d_out)
    n_heads : int
        h, which must divide the widths of W_Q, W_K and W_V.
    x_kv : array_like, shape (..., n_k, d_model), optional
        The tokens that answer (keys and values). Defaults to ``x``
        (self-attention); another sequence gives cross-attention.
    mask : bool or float array, broadcastable to (..., h, n_q, n_k), optional
    is_causal : bool
    return_weights : bool
        Also return the weights of every head, shape (..., h, n_q, n_k).

    Returns
    -------
    output : numpy.ndarray, shape (..., n_q, d_out)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(5, 8))
    >>> w = [rng.normal(size=(8, 8)) for _ in range(4)]
    >>> multi_head_attention(x, *w, n_heads=2).shape
    (5, 8)
    """
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n_q, d_model)")
    kva = xa if x_kv is None else as_float_array(x_kv, "x_kv", min_ndim=2, layout="(..., n_k, d_model)")
    h = as_int(n_heads, "n_heads", minimum=1)
    d_model = xa.shape[-1]
    if kva.shape[-1] != d_model:
        raise ValueError(
            f"x_kv must have the same width d_model as x: x has shape {xa.shape}, x_kv has shape {kva.shape}"
        )
    mats = {}
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        wa = weight_matrix(w, name, xa.shape)
        if wa.shape[1] % h:
            raise ValueError(f"n_heads ({h}) must divide the width of {name}; {name} has shape {wa.shape}")
        mats[name] = wa
    same_width(mats["w_q"], mats["w_k"], "h*d_k")
    wo = as_float_array(w_o, "w_o", min_ndim=2, layout="(h*d_v, d_out)")
    if wo.ndim != 2 or wo.shape[0] != mats["w_v"].shape[1]:
        raise ValueError(
            f"w_o must have shape (h*d_v, d_out) = ({mats['w_v'].shape[1]}, d_out) to take the "
            f"concatenated heads; got shape {wo.shape}"
        )
    q = split_heads(xa @ mats["w_q"], h)
    k = split_heads(kva @ mats["w_k"], h)
    v = split_heads(kva @ mats["w_v"], h)
    heads, weights = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, return_weights=True)
    out = merge_heads(heads) @ wo
    return (out, weights) if return_weights else out
