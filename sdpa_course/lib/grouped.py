"""Grouped-query attention: several query heads share one head of keys and values.

With h query heads and h_kv key-value heads (h_kv divides h), the query heads
fall into h_kv groups of h / h_kv consecutive heads, and query head l reads
key-value head ``l // (h / h_kv)``, as PyTorch's
``scaled_dot_product_attention(..., enable_gqa=True)`` pairs them. One
function covers the three cases: h_kv = h is multi-head attention, h_kv = 1
is multi-query attention (Shazeer, 2019), anything between is grouped-query
attention (Ainslie et al., 2023).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_float_array, as_int, broadcast_batch, check_mask
from .attention import scaled_dot_product_attention

__all__ = ["repeat_kv", "grouped_query_attention"]


def repeat_kv(x: Any, n_heads: int) -> np.ndarray:
    """Repeat each key-value head for the query heads of its group: (..., h_kv, n, d) -> (..., h, n, d).

    Head g of ``x`` becomes heads ``g * (h / h_kv)`` to ``(g + 1) * (h / h_kv) - 1``
    of the result (each head repeated in place, as ``torch.repeat_interleave``
    along the head axis). This is the copy that grouped-query attention does
    *not* need to store: :func:`grouped_query_attention` reads the shared
    heads without it.

    Examples
    --------
    >>> kv = np.array([[[0.0]], [[1.0]]])        # h_kv = 2 heads of one position
    >>> repeat_kv(kv, 4)[:, 0, 0]                # heads 0, 1 read head 0; heads 2, 3 read head 1
    array([0., 0., 1., 1.])
    """
    xa = as_float_array(x, "x", min_ndim=3, layout="(..., h_kv, n, d)")
    h = as_int(n_heads, "n_heads", minimum=1)
    h_kv = xa.shape[-3]
    if h_kv == 0 or h % h_kv:
        raise ValueError(
            f"the number of key-value heads ({h_kv}) must divide n_heads ({h}); "
            f"x has shape {xa.shape} (..., h_kv, n, d)"
        )
    return np.repeat(xa, h // h_kv, axis=-3)


def _heads(q: Any, k: Any, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check the head axes: q (..., h, n_q, d_k), k (..., h_kv, n_k, d_k), v (..., h_kv, n_k, d_v)."""
    qa = as_float_array(q, "q", min_ndim=3, layout="(..., h, n_q, d_k)")
    ka = as_float_array(k, "k", min_ndim=3, layout="(..., h_kv, n_k, d_k)")
    va = as_float_array(v, "v", min_ndim=3, layout="(..., h_kv, n_k, d_v)")
    h, h_kv = qa.shape[-3], ka.shape[-3]
    if va.shape[-3] != h_kv:
        raise ValueError(
            f"k and v must have the same number of key-value heads: k has shape {ka.shape} (..., h_kv, n_k, d_k), "
            f"v has shape {va.shape} (..., h_kv, n_k, d_v)"
        )
    if h_kv == 0 or h % h_kv:
        raise ValueError(
            f"the number of key-value heads h_kv ({h_kv}) must divide the number of query heads h ({h}): "
            f"q has shape {qa.shape} (..., h, n_q, d_k), k has shape {ka.shape} (..., h_kv, n_k, d_k)"
        )
    if qa.shape[-1] != ka.shape[-1]:
        raise ValueError(
            f"d_k of q ({qa.shape[-1]}) must equal d_k of k ({ka.shape[-1]}): "
            f"q has shape {qa.shape} (..., h, n_q, d_k), k has shape {ka.shape} (..., h_kv, n_k, d_k)"
        )
    if va.shape[-2] != ka.shape[-2]:
        raise ValueError(
            f"n_k of k ({ka.shape[-2]}) must equal n_k of v ({va.shape[-2]}): k has shape "
            f"{ka.shape} (..., h_kv, n_k, d_k), v has shape {va.shape} (..., h_kv, n_k, d_v)"
        )
    return qa, ka, va


def grouped_query_attention(
    q: Any,
    k: Any,
    v: Any,
    mask: Any | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Attention of h query heads over h_kv shared heads of keys and values.

    Query head l attends, as :func:`~lib.attention.scaled_dot_product_attention`
    does (scale 1/sqrt(d_k), mask, causal flag), over key-value head
    ``l // (h / h_kv)``. The keys and values are read in place, never copied
    per query head. ``h_kv = h`` gives multi-head attention, ``h_kv = 1``
    multi-query attention.

    Parameters
    ----------
    q : array_like, shape (..., h, n_q, d_k)
    k : array_like, shape (..., h_kv, n_k, d_k)
    v : array_like, shape (..., h_kv, n_k, d_v)
        h_kv must divide h.
    mask : array_like of bool or float, broadcastable to (..., h, n_q, n_k), optional
    is_causal : bool
    scale : float, optional
    return_weights : bool
        Also return every query head's weights, shape (..., h, n_q, n_k).

    Returns
    -------
    output : numpy.ndarray, shape (..., h, n_q, d_v)

    Examples
    --------
    Four query heads in two groups: heads 0 and 1 read key-value head 0.

    >>> rng = np.random.default_rng(0)
    >>> q = rng.normal(size=(4, 3, 2))
    >>> k, v = rng.normal(size=(2, 2, 3, 2))
    >>> out = grouped_query_attention(q, k, v, is_causal=True)
    >>> out.shape
    (4, 3, 2)
    >>> own = scaled_dot_product_attention(q[1], k[0], v[0], is_causal=True)
    >>> bool(np.allclose(out[1], own))
    True
    """
    qa, ka, va = _heads(q, k, v)
    h, h_kv = qa.shape[-3], ka.shape[-3]
    n_q, n_k = qa.shape[-2], ka.shape[-2]
    group = h // h_kv
    batch = broadcast_batch({"q": qa, "k": ka, "v": va}, core=3)
    # Split the query heads into (h_kv, group); a key-value head gets an axis
    # of length 1 there, which broadcasts over the query heads of its group.
    q5 = qa.reshape(*qa.shape[:-3], h_kv, group, n_q, qa.shape[-1])
    k5, v5 = ka[..., None, :, :], va[..., None, :, :]
    m5 = None
    if mask is not None:
        full = (*batch, h, n_q, n_k)
        m5 = np.broadcast_to(check_mask(mask, full), full).reshape(*batch, h_kv, group, n_q, n_k)
    if not return_weights:
        out = scaled_dot_product_attention(q5, k5, v5, m5, is_causal=is_causal, scale=scale)
        assert isinstance(out, np.ndarray)  # without the weights, the output alone
        return out.reshape(*batch, h, n_q, va.shape[-1])
    out, weights = scaled_dot_product_attention(q5, k5, v5, m5, is_causal=is_causal, scale=scale, return_weights=True)
    return out.reshape(*batch, h, n_q, va.shape[-1]), weights.reshape(*batch, h, n_q, n_k)
