"""Decoding one token at a time: the KV cache, and what it costs in memory.

A decoder that writes text computes, for each new token, only that token's
query, key and value. The keys and values of the earlier tokens never change
(the causal mask sees to that, chapter 6), so it keeps them: the **KV cache**.
The new query then attends over the cached keys, with no mask at all, since
every key in the cache is in its past.

:func:`decoder_attention` computes a decoder layer's heads for all positions
at once, with the causal (or sliding-window) mask; :func:`decode_with_cache`
computes the same thing one position at a time with a :class:`KVCache`. Both
take grouped-query heads (``n_kv_heads``) and rotary position embeddings
(``rotary=True``), as today's decoder-only models run them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._checks import as_float_array, as_int, weight_matrix
from .grouped import grouped_query_attention
from .masks import causal_mask, sliding_window_mask
from .multihead import split_heads
from .rotary import rotate

__all__ = ["KVCache", "kv_cache_bytes", "decoder_attention", "decode_with_cache"]


def kv_cache_bytes(n_layers: int, n_kv_heads: int, d_head: int, bytes_per_number: int, n_tokens: int = 1) -> int:
    """Bytes of keys and values a decoder keeps: ``2 * n_layers * n_kv_heads * d_head * bytes_per_number`` per token.

    The 2 counts a key and a value, each ``d_head`` numbers wide, for every
    key-value head of every layer.

    Examples
    --------
    LLaMA 7B's shape (32 layers, 32 heads of width 128) in 16-bit numbers:

    >>> kv_cache_bytes(32, 32, 128, 2)
    524288
    >>> kv_cache_bytes(32, 32, 128, 2, n_tokens=2048) == 2**30
    True
    """
    sizes = (
        as_int(n_layers, "n_layers", minimum=1),
        as_int(n_kv_heads, "n_kv_heads", minimum=1),
        as_int(d_head, "d_head", minimum=1),
        as_int(bytes_per_number, "bytes_per_number", minimum=1),
        as_int(n_tokens, "n_tokens", minimum=0),
    )
    return 2 * math.prod(sizes)


class KVCache:
    """The keys and values of one attention layer, appended position by position.

    ``window`` (optional) keeps only that many most recent positions, the
    rolling cache of sliding-window attention: an older entry is dropped as a
    new one arrives. ``keys`` and ``values`` have shape
    (..., h_kv, positions held, d); ``positions`` says which positions they are.

    Examples
    --------
    >>> cache = KVCache(window=2)
    >>> for i in range(3):
    ...     cache.append(np.full((1, 1, 2), float(i)), np.full((1, 1, 1), 10.0 * i))
    >>> cache.positions, cache.keys[0, :, 0], cache.values[0, :, 0]
    (array([1, 2]), array([1., 2.]), array([10., 20.]))
    """

    def __init__(self, window: int | None = None) -> None:
        self.window = None if window is None else as_int(window, "window", minimum=1)
        self._keys: np.ndarray | None = None
        self._values: np.ndarray | None = None
        self._start = 0  # the position of the oldest entry held
        self.seen = 0  # positions appended so far

    def append(self, k: Any, v: Any) -> None:
        """Add the keys ``k`` (..., h_kv, m, d_k) and values ``v`` (..., h_kv, m, d_v) of m new positions."""
        ka = as_float_array(k, "k", min_ndim=3, layout="(..., h_kv, m, d_k)")
        va = as_float_array(v, "v", min_ndim=3, layout="(..., h_kv, m, d_v)")
        if ka.shape[:-1] != va.shape[:-1]:
            raise ValueError(
                f"k and v must hold the same heads and positions: k has shape {ka.shape} (..., h_kv, m, d_k), "
                f"v has shape {va.shape} (..., h_kv, m, d_v)"
            )
        if self._keys is None or self._values is None:
            keys, values = ka, va
        else:
            for name, new, held in (("k", ka, self._keys), ("v", va, self._values)):
                if new.shape[:-2] != held.shape[:-2] or new.shape[-1] != held.shape[-1]:
                    raise ValueError(
                        f"{name} of shape {new.shape} does not fit the cache, which holds shape {held.shape} "
                        "(..., h_kv, positions, d): only the positions axis may differ"
                    )
            keys = np.concatenate([self._keys, ka], axis=-2)
            values = np.concatenate([self._values, va], axis=-2)
        self.seen += ka.shape[-2]
        drop = 0 if self.window is None else max(0, keys.shape[-2] - self.window)
        self._keys, self._values = keys[..., drop:, :], values[..., drop:, :]
        self._start += drop

    @property
    def keys(self) -> np.ndarray:
        """The keys held, (..., h_kv, positions held, d_k)."""
        if self._keys is None:
            raise ValueError("the cache is empty: append the keys and values of a position first")
        return self._keys

    @property
    def values(self) -> np.ndarray:
        """The values held, (..., h_kv, positions held, d_v)."""
        if self._values is None:
            raise ValueError("the cache is empty: append the keys and values of a position first")
        return self._values

    @property
    def positions(self) -> np.ndarray:
        """The positions whose keys and values are held, oldest first."""
        return np.arange(self._start, self.seen)

    @property
    def nbytes(self) -> int:
        """The bytes the keys and values held take."""
        return 0 if self._keys is None or self._values is None else self._keys.nbytes + self._values.nbytes

    def __len__(self) -> int:
        return self.seen - self._start


def _projections(
    x: Any, w_q: Any, w_k: Any, w_v: Any, n_heads: int, n_kv_heads: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Check x and the three matrices; return them with h and h_kv."""
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n, d_model)")
    h = as_int(n_heads, "n_heads", minimum=1)
    h_kv = h if n_kv_heads is None else as_int(n_kv_heads, "n_kv_heads", minimum=1)
    if h % h_kv:
        raise ValueError(f"n_kv_heads ({h_kv}) must divide n_heads ({h})")
    wq, wk, wv = (weight_matrix(w, name, xa.shape) for w, name in ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v")))
    if wq.shape[1] % h:
        raise ValueError(f"n_heads ({h}) must divide the width of w_q, h * d_k; w_q has shape {wq.shape}")
    d_k = wq.shape[1] // h
    if wk.shape[1] != h_kv * d_k:
        raise ValueError(
            f"w_k must have shape (d_model, n_kv_heads * d_k) = ({xa.shape[-1]}, {h_kv * d_k}), "
            f"n_kv_heads = {h_kv} heads of the queries' width d_k = {d_k}; got shape {wk.shape}"
        )
    if wv.shape[1] % h_kv:
        raise ValueError(
            f"n_kv_heads ({h_kv}) must divide the width of w_v, n_kv_heads * d_v; w_v has shape {wv.shape}"
        )
    return xa, wq, wk, wv, h, h_kv


def _heads_of(
    rows: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, h: int, h_kv: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries (..., h, m, d_k), keys and values (..., h_kv, m, d) of some rows of x."""
    return split_heads(rows @ wq, h), split_heads(rows @ wk, h_kv), split_heads(rows @ wv, h_kv)


def decoder_attention(
    x: Any,
    w_q: Any,
    w_k: Any,
    w_v: Any,
    *,
    n_heads: int,
    n_kv_heads: int | None = None,
    rotary: bool = False,
    window: int | None = None,
) -> np.ndarray:
    """The heads of a decoder's self-attention, every position at once.

    ``Q = X W_Q`` is split into ``n_heads`` heads, ``K = X W_K`` and
    ``V = X W_V`` into ``n_kv_heads`` (default: as many); with ``rotary``
    the queries and keys of position i are turned by :func:`~lib.rotary.rotate`
    at position i; then :func:`~lib.grouped.grouped_query_attention` with the
    causal mask, or with :func:`~lib.masks.sliding_window_mask` when a
    ``window`` is given.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
    w_q : array_like, shape (d_model, n_heads * d_k)
    w_k : array_like, shape (d_model, n_kv_heads * d_k)
    w_v : array_like, shape (d_model, n_kv_heads * d_v)
    n_heads, n_kv_heads : int
    rotary : bool
    window : int, optional

    Returns
    -------
    numpy.ndarray, shape (..., n_heads, n, d_v): each head's outputs (before
    they are concatenated and multiplied by W_O).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x, w_q, w_k, w_v = rng.normal(size=(5, 8)), *rng.normal(size=(3, 8, 4))
    >>> decoder_attention(x, w_q, w_k[:, :2], w_v[:, :2], n_heads=2, n_kv_heads=1, rotary=True).shape
    (2, 5, 2)
    """
    xa, wq, wk, wv, h, h_kv = _projections(x, w_q, w_k, w_v, n_heads, n_kv_heads)
    q, k, v = _heads_of(xa, wq, wk, wv, h, h_kv)
    if rotary:
        q, k = rotate(q), rotate(k)
    n = xa.shape[-2]
    allowed = causal_mask(n) if window is None else sliding_window_mask(n, window=window)
    out = grouped_query_attention(q, k, v, allowed)
    assert isinstance(out, np.ndarray)  # without the weights, the output alone
    return out


def decode_with_cache(
    x: Any,
    w_q: Any,
    w_k: Any,
    w_v: Any,
    *,
    n_heads: int,
    n_kv_heads: int | None = None,
    rotary: bool = False,
    window: int | None = None,
) -> np.ndarray:
    """The same heads as :func:`decoder_attention`, computed one position at a time with a :class:`KVCache`.

    At position i only row i of x is projected; its key and value (turned at
    position i first, with ``rotary``) are appended to the cache, and its
    query attends over every key the cache holds, with no mask: the cache
    holds only the past (and, with a ``window``, only the last ``window``
    positions of it). The queries are never cached: each is used once.

    Returns
    -------
    numpy.ndarray, shape (..., n_heads, n, d_v)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x, w_q, w_k, w_v = rng.normal(size=(5, 8)), *rng.normal(size=(3, 8, 4))
    >>> full = decoder_attention(x, w_q, w_k, w_v, n_heads=2, rotary=True, window=3)
    >>> step_by_step = decode_with_cache(x, w_q, w_k, w_v, n_heads=2, rotary=True, window=3)
    >>> bool(np.allclose(full, step_by_step, rtol=1e-12, atol=1e-12))
    True
    """
    xa, wq, wk, wv, h, h_kv = _projections(x, w_q, w_k, w_v, n_heads, n_kv_heads)
    cache = KVCache(window=window)
    outputs = []
    for i in range(xa.shape[-2]):
        q, k, v = _heads_of(xa[..., i : i + 1, :], wq, wk, wv, h, h_kv)
        if rotary:
            q, k = rotate(q, [i]), rotate(k, [i])
        cache.append(k, v)
        out = grouped_query_attention(q, cache.keys, cache.values)
        assert isinstance(out, np.ndarray)  # without the weights, the output alone
        outputs.append(out)
    if not outputs:
        return np.zeros((*xa.shape[:-2], h, 0, wv.shape[1] // h_kv), dtype=np.result_type(xa, wv))
    return np.concatenate(outputs, axis=-2)
