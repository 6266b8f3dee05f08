"""Blocked attention: the online softmax (FlashAttention's idea) in numpy.

The reference :func:`~lib.attention.scaled_dot_product_attention` builds the
whole ``(n_q, n_k)`` score matrix, takes its softmax row by row, then
multiplies by V. For 16384 tokens that matrix alone holds 268 million numbers
(1 GiB in float32) per head.

The functions here never build it. They walk over the keys in blocks and keep,
for every query, three running quantities:

* ``m``, the largest score seen so far (the running maximum);
* ``l``, the sum of ``exp(score - m)`` over the keys seen so far;
* ``acc``, the sum of ``exp(score - m) * v_j`` over the same keys.

When a block brings a larger maximum ``m_new``, every term summed so far was
computed against the old maximum; multiplying ``l`` and ``acc`` by
``exp(m_old - m_new)`` turns each ``exp(s - m_old)`` into ``exp(s - m_new)``.
After the last block ``acc / l`` is exactly the softmax-weighted sum of the
values: the same output as the reference, up to rounding.

Queries are taken in blocks too, so at most one tile of scores, ``B_r``
queries by ``B_c`` keys (per batch entry), exists at a time. The tile is
chosen from the processor's cache (:mod:`lib.tiles`): every elementwise pass
over it (maximum, subtraction, exponential, sum) then reads and writes the
cache instead of main memory. Under ``is_causal`` the tiles of keys that lie
entirely in the future of a block of queries are never computed.

The running maximum only keeps ``exp`` from overflowing. When a bound on the
scores (Cauchy-Schwarz: ``|q_i . k_j| <= |q_i| |k_j|``) proves that it cannot
overflow, the maximum is skipped, and the row sums come out of the second
product (V with a column of ones): one elementwise pass per tile instead of
four. A float mask, which may add anything to the scores, always takes the
shifted path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ._checks import as_float_array, as_int, check_attention
from ._scores import apply_mask, check_no_overflow
from .attention import scaled_dot_product_attention
from .tiles import Tile, choose_tile, tile_steps

__all__ = ["DEFAULT_BLOCK_SIZE", "OnlineSoftmaxStep", "online_softmax_steps", "online_softmax", "blocked_attention"]

DEFAULT_BLOCK_SIZE = 512
"""Entries per block of :func:`online_softmax` and :func:`online_softmax_steps`
(blocked attention chooses its tiles from the cache instead)."""


class OnlineSoftmaxStep(NamedTuple):
    """The running state of the online softmax after one block.

    ``stop``: the keys ``0 .. stop-1`` have been seen. ``running_max`` and
    ``running_sum`` have the shape of ``x`` without its last axis.
    """

    stop: int
    running_max: np.ndarray
    running_sum: np.ndarray


def _merge_max(m_old: np.ndarray, m_block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fold a block's maximum into the running maximum.

    Returns ``(m_new, shift, rescale)``: the new running maximum; the number
    to subtract from the block's scores before ``exp``; and
    ``exp(m_old - shift)``, the factor that rescales what was summed so far.

    While a query has seen only ``-inf`` scores (keys it may not attend to),
    its maximum is ``-inf``. Shifting by 0 instead keeps every
    ``exp(-inf - shift)`` an exact 0 and never computes
    ``exp(-inf - -inf) = exp(NaN)``.
    """
    m_new = np.maximum(m_old, m_block)
    shift = np.where(np.isneginf(m_new), np.zeros_like(m_new), m_new)
    rescale = np.exp(m_old - shift)
    return m_new, shift, rescale


def online_softmax_steps(x: Any, block_size: int = DEFAULT_BLOCK_SIZE) -> list[OnlineSoftmaxStep]:
    """The running maximum and running sum of the online softmax, block by block.

    Walks along the last axis of ``x`` in blocks of ``block_size`` entries.
    After each block it records the largest entry seen so far, ``m``, and
    ``l = sum of exp(x_j - m)`` over the entries seen so far. When a block
    raises the maximum from ``m_old`` to ``m_new``, the old sum is multiplied
    by ``exp(m_old - m_new)``, which turns each of its terms
    ``exp(x_j - m_old)`` into ``exp(x_j - m_new)``.

    Parameters
    ----------
    x : array_like of real numbers, shape (..., n)
        The logits; ``-inf`` is allowed (a forbidden key).
    block_size : int
        Entries per block, 1 or more.

    Returns
    -------
    list of OnlineSoftmaxStep
        One ``(stop, running_max, running_sum)`` per block. After the last
        block, ``running_max`` is ``x.max(-1)`` and ``running_sum`` is
        ``exp(x - running_max).sum(-1)`` (0 for a row of only ``-inf``).

    Examples
    --------
    >>> for step in online_softmax_steps([1.0, 3.0, 2.0], block_size=2):
    ...     print(step.stop, float(step.running_max), round(float(step.running_sum), 6))
    2 3.0 1.135335
    3 3.0 1.503215
    """
    arr = as_float_array(x, "x", min_ndim=1, layout="(..., n)", allow_neg_inf=True)
    size = as_int(block_size, "block_size", minimum=1)
    m = np.full(arr.shape[:-1], -np.inf, dtype=arr.dtype)
    total = np.zeros(arr.shape[:-1], dtype=arr.dtype)
    steps = []
    for start in range(0, arr.shape[-1], size):
        block = arr[..., start : start + size]
        m, shift, rescale = _merge_max(m, block.max(axis=-1))
        total = total * rescale + np.exp(block - shift[..., None]).sum(axis=-1)
        steps.append(OnlineSoftmaxStep(min(start + size, arr.shape[-1]), m, total))
    return steps


def online_softmax(x: Any, block_size: int = DEFAULT_BLOCK_SIZE) -> np.ndarray:
    """Softmax along the last axis from one blocked pass of running max and sum.

    The first pass (:func:`online_softmax_steps`) reads ``x`` once, block by
    block, to find every row's maximum ``m`` and normaliser
    ``l = sum_j exp(x_j - m)``; the weights are then ``exp(x_j - m) / l``.
    The result equals :func:`lib.softmax` up to rounding; a row of only
    ``-inf`` gets all-zero weights.

    Examples
    --------
    >>> online_softmax([1.0, 3.0, 2.0], block_size=2).round(6)
    array([0.090031, 0.665241, 0.244728])
    """
    arr = as_float_array(x, "x", min_ndim=1, layout="(..., n)", allow_neg_inf=True)
    steps = online_softmax_steps(arr, block_size)
    if not steps:  # nothing to normalise along an empty axis
        return arr.copy()
    m, total = steps[-1].running_max, steps[-1].running_sum
    shift = np.where(np.isneginf(m), np.zeros_like(m), m)
    weights: np.ndarray = np.exp(arr - shift[..., None])
    weights /= np.where(total > 0, total, np.ones_like(total))[..., None]
    return weights


def blocked_attention(
    q: Any,
    k: Any,
    v: Any,
    mask: Any | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    block_size: int | None = None,
    always_shift: bool = False,
) -> np.ndarray:
    """Scaled dot-product attention without the full score matrix.

    Computes what :func:`~lib.attention.scaled_dot_product_attention`
    computes (same arguments, same conventions, same errors; no weights to
    return, since they are never stored) with the online softmax: the score
    matrix is cut into tiles of queries by keys (FlashAttention's
    ``B_r x B_c`` tiles), and for each block of queries a running maximum, a
    running sum and a running weighted sum of values are carried from one
    tile of keys to the next.

    Parameters
    ----------
    q, k, v, mask, is_causal, scale
        As for :func:`~lib.attention.scaled_dot_product_attention`.
    block_size : int, optional
        Queries and keys per tile (1 or more): at most ``block_size**2``
        scores per batch entry exist at a time. By default the tile is
        chosen from the processor's cache (:func:`lib.tiles.choose_tile`),
        so that every pass over it runs in the cache. Either way, several
        batch entries share a step when their tiles together fit the cache.
    always_shift : bool
        Take the shifted path (running maximum, four passes per tile) even
        when a bound proves the shift unneeded; the result is the same up to
        rounding. For measuring what the shift costs.

    Returns
    -------
    numpy.ndarray, shape (..., n_q, d_v)
        Equal to the reference up to rounding; a query with no permitted key
        gets a zero output.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.normal(size=(5, 3)) for _ in range(3))
    >>> out = blocked_attention(q, k, v, is_causal=True, block_size=2)
    >>> ref = scaled_dot_product_attention(q, k, v, is_causal=True)
    >>> bool(np.allclose(out, ref, rtol=0, atol=1e-12))
    True
    """
    args, va = check_attention(q, k, v, mask, scale)  # the reference's checks, in its order
    qa, ka, mask, factor, batch = args
    n_q, n_k = qa.shape[-2], ka.shape[-2]
    side = None if block_size is None else as_int(block_size, "block_size", minimum=1)

    d_k, d_v = qa.shape[-1], va.shape[-1]
    score_dtype = np.result_type(qa, ka)
    lead = np.broadcast_shapes(batch, va.shape[:-2]) or (1,)  # at least one batch axis
    out = np.zeros((*lead, n_q, d_v), dtype=np.result_type(score_dtype, va))
    if out.size == 0 or n_k == 0:
        return out.reshape((*np.broadcast_shapes(batch, va.shape[:-2]), n_q, d_v))
    tile = choose_tile(n_q, n_k, d_k, d_v, score_dtype.itemsize, heads=lead[-1], side=side)
    head_step = _HeadStep(
        factor,
        is_causal,
        tile,
        checked=not _scores_cannot_overflow(qa, ka, factor),
        shift_free=not always_shift and _shift_free(qa, ka, va, factor, mask),
        shapes=(qa.shape, ka.shape),
        refuse=lambda: scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, scale=scale),
    )
    head_step.run_heads(qa, ka, va, mask, out)
    return out.reshape((*np.broadcast_shapes(batch, va.shape[:-2]), n_q, d_v))


def _scores_cannot_overflow(qa: np.ndarray, ka: np.ndarray, factor: float) -> bool:
    """True when no score ``(q_i * factor) . k_j`` can overflow, from a bound.

    Every term of the dot product, and every partial sum, is at most
    ``d_k * max|q| * |factor| * max|k|`` in size (and ``max|q| * |factor|``
    bounds the scaled queries). When that bound is far below the largest
    float, the scores need no check: a few passes over Q and K (n x d_k
    numbers) replace two over the scores (n_q x n_k). Python floats hold
    the bound, so it cannot overflow itself (it becomes ``inf``: False).
    """
    if qa.size == 0 or ka.size == 0:
        return True
    top_q = max(float(qa.max()), -float(qa.min()))
    top_k = max(float(ka.max()), -float(ka.min()))
    bound: float = qa.shape[-1] * top_q * abs(factor) * max(top_k, 1.0)
    return bound < float(np.finfo(np.result_type(qa, ka)).max) / 4


def _shift_free(qa: np.ndarray, ka: np.ndarray, va: np.ndarray, factor: float, mask: np.ndarray | None) -> bool:
    """True when the scores' ``exp`` needs no shift: no overflow, no underflow.

    By the Cauchy-Schwarz inequality every score obeys
    ``|score| <= B = |factor| * max_i |q_i| * max_j |k_j|``. When
    ``B <= log(largest float) / 2``, ``exp(score)`` lies between ``exp(-B)``
    and ``exp(B)``: far from both overflow and the subnormal range, with
    full relative precision. The sums are bounded too: the row sums by
    ``n_k * exp(B)`` and the weighted sums of values by
    ``n_k * exp(B) * max|v|``, which must stay below the largest float.
    A float mask may add anything to the scores, so it always takes the
    shifted path; a boolean or causal mask only writes ``-inf``, whose
    ``exp`` is an exact 0.
    """
    if mask is not None and mask.dtype != np.bool_:
        return False
    dtype = np.result_type(qa, ka, va)
    log_max = math.log(float(np.finfo(dtype).max))
    with np.errstate(over="ignore", invalid="ignore"):
        # Squared row norms in the inputs' own dtype: n numbers, no copy of
        # Q or K; an overflow gives inf, and the bound then fails as it should.
        top_q = float(np.sqrt(np.einsum("...d,...d->...", qa, qa).max()))
        top_k = float(np.sqrt(np.einsum("...d,...d->...", ka, ka).max()))
        top_v = max(float(va.max()), -float(va.min()))  # max|v| without a copy of V
    bound = abs(factor) * top_q * top_k
    if not (np.isfinite(bound) and np.isfinite(top_v)):
        return False
    return bound <= log_max / 2 and bound + math.log(ka.shape[-2]) + math.log(max(top_v, 1.0)) <= log_max - 2


class _HeadStep(NamedTuple):
    """Blocked attention for a group of heads, tile by tile."""

    factor: float
    is_causal: bool
    tile: Tile
    checked: bool  # check each tile of scores for overflow (the bound did not rule it out)
    shift_free: bool  # a bound proves exp(score) cannot overflow: no running maximum needed
    shapes: tuple[tuple[int, ...], tuple[int, ...]]  # of the whole q and k, for the error message
    refuse: Callable[[], object]  # raises the reference's error for a score of +inf

    def run_heads(
        self, qa: np.ndarray, ka: np.ndarray, va: np.ndarray, mask: np.ndarray | None, out: np.ndarray
    ) -> None:
        """Write the attention of every head into ``out``, of shape (*lead, n_q, d_v),
        ``tile.heads`` heads at a time (q, k, v and the mask broadcast to ``lead``)."""
        lead, n_q, n_k = out.shape[:-2], qa.shape[-2], ka.shape[-2]
        # Views with the output's leading shape: a batch entry (head) of each is
        # indexed alike, and nothing is copied.
        views = [np.broadcast_to(a, (*lead, *a.shape[-2:])) for a in (qa, ka, va)]
        mask_view = None if mask is None else np.broadcast_to(mask, (*lead, n_q, n_k))
        for outer in np.ndindex(*lead[:-1]):
            for h0 in range(0, lead[-1], self.tile.heads):
                heads = (*outer, slice(h0, h0 + self.tile.heads))
                q_h, k_h, v_h = (a[heads] for a in views)
                self.run(q_h, k_h, v_h, None if mask_view is None else mask_view[heads], out[heads])

    def run(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, out: np.ndarray) -> None:
        """Write ``attention(q, k, v)`` of shape (heads, n_q, d_v) into ``out``."""
        if self.shift_free:
            self._run_shift_free(q, k, v, mask, out)
            return
        k_t = np.swapaxes(k, -1, -2)
        # Under the causal mask, the tiles of keys in a block's future are skipped.
        for queries, keys in tile_steps(q.shape[-2], k.shape[-2], self.tile, self.is_causal):
            i0, i1 = queries.start, queries.stop
            # Scale this block of queries once, for every tile of keys.
            q_block = _scaled(q[..., i0:i1, :], self.factor, self.checked)
            m = total = acc = None
            for j0, j1 in ((c.start, c.stop) for c in keys):
                s = _tile_scores(q_block, k_t[..., j0:j1], self.checked, self.shapes)
                self._mask_tile(s, mask, i0, i1, j0, j1)
                m_tile = s.max(axis=-1, keepdims=True)
                if mask is not None and np.isposinf(m_tile).any():
                    self.refuse()  # a float mask pushed a score to +inf: the reference's error
                if m is None:  # the first tile: nothing to rescale yet
                    m = m_tile
                    s -= np.where(np.isneginf(m), np.zeros_like(m), m)
                    np.exp(s, out=s)  # s now holds exp(score - m)
                    total = s.sum(axis=-1, keepdims=True)
                    acc = s @ v[..., j0:j1, :]
                else:
                    m, shift, rescale = _merge_max(m, m_tile)
                    s -= shift
                    np.exp(s, out=s)
                    total *= rescale
                    total += s.sum(axis=-1, keepdims=True)
                    acc *= rescale
                    acc += s @ v[..., j0:j1, :]
                del s  # free this tile of scores before the next one is computed
            assert total is not None and acc is not None  # every block of queries reads some tile of keys
            # A query that saw no permitted key has total 0 and acc 0: output 0.
            total[total == 0] = 1
            np.divide(acc, total, out=out[..., i0:i1, :])

    def _mask_tile(self, s: np.ndarray, mask: np.ndarray | None, i0: int, i1: int, j0: int, j1: int) -> None:
        """Mask the tile of queries i0..i1-1 by keys j0..j1-1 in place."""
        # Keys past the diagonal of this tile: key j is allowed when j <= i.
        allowed = np.tri(i1 - i0, j1 - j0, i0 - j0, dtype=bool) if self.is_causal and j1 - 1 > i0 else None
        if mask is not None or allowed is not None:
            apply_mask(s, None if mask is None else mask[..., i0:i1, j0:j1], allowed)

    def _run_shift_free(
        self, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, out: np.ndarray
    ) -> None:
        """:meth:`run` when every ``exp(score)`` is known to stay in range.

        The softmax does not change when every score of a row is shifted by
        the same number; the online softmax shifts by the running maximum
        only so that ``exp`` cannot overflow. When :func:`_shift_free` has
        proved that it cannot, each tile needs one pass (``exp``) instead of
        four (maximum, subtraction, ``exp``, sum), and nothing is rescaled.
        The row sums come out of the second matrix product: V gets a column
        of ones, so ``exp(S) @ [V | 1]`` holds the weighted sum of the values
        and, in its last column, the sum of the weights.
        """
        d_v = v.shape[-1]
        k_t = np.swapaxes(k, -1, -2)
        for queries, keys in tile_steps(q.shape[-2], k.shape[-2], self.tile, self.is_causal):
            i0, i1 = queries.start, queries.stop
            q_block = q[..., i0:i1, :] * self.factor
            acc = None
            for j0, j1 in ((c.start, c.stop) for c in keys):
                s = _tile_scores(q_block, k_t[..., j0:j1], False, self.shapes)  # |scores| <= the bound
                self._mask_tile(s, mask, i0, i1, j0, j1)
                np.exp(s, out=s)
                v_ones = np.empty((*v.shape[:-2], j1 - j0, d_v + 1), dtype=v.dtype)
                v_ones[..., :d_v] = v[..., j0:j1, :]
                v_ones[..., d_v] = 1
                if acc is None:
                    acc = s @ v_ones
                else:
                    acc += s @ v_ones
                del s
            assert acc is not None  # every block of queries reads some tile of keys
            total = acc[..., d_v:]
            total[total == 0] = 1  # a query that saw no permitted key: output 0
            np.divide(acc[..., :d_v], total, out=out[..., i0:i1, :])


def _scaled(q_block: np.ndarray, factor: float, checked: bool) -> np.ndarray:
    """``q_block * factor``; overflow is left to the check of the scores."""
    scaled: np.ndarray
    if not checked:
        scaled = q_block * factor
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = q_block * factor
    return scaled


def _tile_scores(
    q_block: np.ndarray, k_t: np.ndarray, checked: bool, shapes: tuple[tuple[int, ...], tuple[int, ...]]
) -> np.ndarray:
    """One tile of scaled scores, ``q_block @ k_t``, checked for overflow if asked."""
    s: np.ndarray
    if not checked:
        s = q_block @ k_t
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            s = q_block @ k_t
        check_no_overflow(s, *shapes)
    return s
