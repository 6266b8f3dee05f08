"""Multi-head attention: split into heads, attend, concatenate, project."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ._checks import as_float_array
from .attention import scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "multi_head_attention"]


def _heads(n_heads: object) -> int:
    try:
        h = operator.index(n_heads)
    except TypeError:
        raise TypeError(f"n_heads must be an integer; got {type(n_heads).__name__} {n_heads!r}") from None
    if h < 1:
        raise ValueError(f"n_heads must be 1 or more; got {h}")
    return h


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
    h = _heads(n_heads)
    width = xa.shape[-1]
    if width % h:
        raise ValueError(
            f"n_heads ({h}) must divide the width of x ({width}); x has shape {xa.shape}"
        )
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
    h = _heads(n_heads)
    d_model = xa.shape[-1]
    if kva.shape[-1] != d_model:
        raise ValueError(
            f"x_kv must have the same width d_model as x: x has shape {xa.shape}, x_kv has shape {kva.shape}"
        )
    mats = {}
    for name, w, rows in (("w_q", w_q, d_model), ("w_k", w_k, d_model), ("w_v", w_v, d_model)):
        wa = as_float_array(w, name, min_ndim=2, layout="(d_model, width)")
        if wa.ndim != 2 or wa.shape[0] != rows:
            raise ValueError(f"{name} must have shape ({rows}, width) to match x of shape {xa.shape}; got shape {wa.shape}")
        if wa.shape[1] % h:
            raise ValueError(f"n_heads ({h}) must divide the width of {name}; {name} has shape {wa.shape}")
        mats[name] = wa
    if mats["w_q"].shape[1] != mats["w_k"].shape[1]:
        raise ValueError(
            f"w_q and w_k must have the same width h*d_k: w_q has shape {mats['w_q'].shape}, "
            f"w_k has shape {mats['w_k'].shape}"
        )
    wo = as_float_array(w_o, "w_o", min_ndim=2, layout="(h*d_v, d_out)")
    if wo.ndim != 2 or wo.shape[0] != mats["w_v"].shape[1]:
        raise ValueError(
            f"w_o must have shape (h*d_v, d_out) = ({mats['w_v'].shape[1]}, d_out) to take the "
            f"concatenated heads; got shape {wo.shape}"
        )
    q = split_heads(xa @ mats["w_q"], h)
    k = split_heads(kva @ mats["w_k"], h)
    v = split_heads(kva @ mats["w_v"], h)
    heads, weights = scaled_dot_product_attention(
        q, k, v, mask, is_causal=is_causal, return_weights=True
    )
    out = merge_heads(heads) @ wo
    return (out, weights) if return_weights else out
