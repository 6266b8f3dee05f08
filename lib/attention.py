"""Scaled dot-product attention, the reference implementation.

It follows the conventions of ``torch.nn.functional.scaled_dot_product_attention``:
row i is query i and column j is key j; leading dimensions broadcast; the scale
defaults to 1/sqrt(d_k) and is applied before the mask and the softmax; a
boolean mask means True = may attend, a float mask is added to the scaled
scores; a query with no permitted key gets zero weights and a zero output.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._checks import as_float_array, broadcast_batch, check_mask, check_qk, check_scale, check_v
from ._scores import apply_mask, scaled_scores_of_checked, scores_cannot_overflow, shift_free, softmax_of_checked
from .masks import causal_mask
from .softmax import softmax
from .tiles import choose_strip

__all__ = ["scaled_scores", "scaled_dot_product_attention", "attend_one_query"]


def scaled_scores(
    q: Any,
    k: Any,
    mask: Any | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
) -> np.ndarray:
    """The logits that enter the softmax: ``Q K^T * scale``, then the mask.

    Entries a query may not attend to are ``-inf``; a float mask is added.

    Parameters
    ----------
    q : array_like, shape (..., n_q, d_k)
    k : array_like, shape (..., n_k, d_k)
    mask : array_like of bool or float, broadcastable to (..., n_q, n_k), optional
        Boolean: True = may attend. Float: added to the scaled scores.
    is_causal : bool
        Also forbid key j for query i when j > i (top-left aligned).
    scale : float, optional
        Defaults to ``1 / sqrt(d_k)``.

    Returns
    -------
    numpy.ndarray, shape (..., n_q, n_k)

    Examples
    --------
    >>> scaled_scores(np.eye(2), np.eye(2), is_causal=True, scale=1.0)
    array([[  1., -inf],
           [  0.,   1.]])
    """
    qa, ka = check_qk(q, k)
    broadcast_batch({"q": qa, "k": ka})
    factor = check_scale(scale, qa.shape[-1])
    scores = scaled_scores_of_checked(qa, ka, factor)
    allowed = causal_mask(qa.shape[-2], ka.shape[-2]) if is_causal else None
    if mask is not None:
        mask = check_mask(mask, scores.shape)
    apply_mask(scores, mask, allowed)
    return scores


def scaled_dot_product_attention(
    q: Any,
    k: Any,
    v: Any,
    mask: Any | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    return_weights: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention, ``O = softmax(Q K^T / sqrt(d_k)) V``.

    Parameters
    ----------
    q : array_like, shape (..., n_q, d_k)
        Queries, one per row.
    k : array_like, shape (..., n_k, d_k)
        Keys, one per row.
    v : array_like, shape (..., n_k, d_v)
        Values, one per row (row j goes with key j).
    mask : array_like of bool or float, broadcastable to (..., n_q, n_k), optional
        Boolean: True = query i may attend to key j. Float: added to the
        scaled scores (``-inf`` forbids).
    is_causal : bool
        Forbid key j for query i when j > i, aligned at the top left when
        n_q != n_k. Combined with ``mask`` when both are given.
    scale : float, optional
        Multiplies the scores before the mask and the softmax; defaults to
        ``1 / sqrt(d_k)``.
    return_weights : bool
        Also return the attention weights.

    Returns
    -------
    output : numpy.ndarray, shape (..., n_q, d_v)
    weights : numpy.ndarray, shape (..., n_q, n_k)
        Only with ``return_weights=True``. Each row sums to 1, or is all 0
        when the query may attend to no key (its output is then 0 too).

    Examples
    --------
    Seed 002's toy example: one query, two keys, d_k = 2.

    >>> q = np.array([[1.0, 0.0]])
    >>> k = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> v = np.array([[2.0, 3.0], [4.0, 5.0]])
    >>> out, w = scaled_dot_product_attention(q, k, v, return_weights=True)
    >>> print(np.round(w, 8))
    [[0.66976155 0.33023845]]
    >>> print(np.round(out, 8))
    [[2.6604769 3.6604769]]

    A causal mask: the first query sees only the first key.

    >>> out = scaled_dot_product_attention(k, k, v, is_causal=True)
    >>> out[0]
    array([2., 3.])
    """
    qa, ka = check_qk(q, k)
    batch = broadcast_batch({"q": qa, "k": ka})
    factor = check_scale(scale, qa.shape[-1])
    if not _strips_take(qa, ka, factor):
        return _attend_whole(q, k, v, mask, is_causal, scale, return_weights)
    n_q, n_k = qa.shape[-2], ka.shape[-2]
    if mask is not None:
        mask = _boolean_if_zero_or_neginf(check_mask(mask, (*batch, n_q, n_k)))
    va = check_v(v, qa, ka)
    if np.broadcast_shapes(batch, va.shape[:-2]) != batch:
        # V adds batch entries of its own: the weights are shared by them.
        return _attend_whole(q, k, v, mask, is_causal, scale, return_weights)
    strips = _Strips(factor, is_causal, shift_free(qa, ka, va, factor, mask))
    out, weights = strips.attend(qa, ka, va, mask, batch, return_weights)
    if out is None:  # a float mask pushed a score to +inf: the whole path names it
        return _attend_whole(q, k, v, mask, is_causal, scale, return_weights)
    if return_weights:
        assert weights is not None  # the strips return them when asked
        return out, weights
    return out


def _strips_take(qa: np.ndarray, ka: np.ndarray, factor: float) -> bool:
    """Whether :class:`_Strips` computes this attention: scores that exist,
    are float32 or float64, and provably cannot overflow."""
    score_dtype = np.result_type(qa, ka)
    return (
        qa.size != 0
        and ka.size != 0
        and score_dtype in (np.float32, np.float64)
        and scores_cannot_overflow(qa, ka, factor)
    )


def _boolean_if_zero_or_neginf(mask: np.ndarray) -> np.ndarray:
    """A float mask of only 0 and -inf as the boolean mask it means, so that
    the two take the same path and give the same output bit for bit; any
    other mask as it is."""
    if mask.dtype != np.bool_:
        permitted: np.ndarray = mask == 0
        if np.all(permitted | np.isneginf(mask)):
            return permitted
    return mask


def _attend_whole(
    q: Any, k: Any, v: Any, mask: Any | None, is_causal: bool, scale: float | None, return_weights: bool
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Attention from the whole score matrix at once: the plain path, for
    inputs the strips do not take (empty, float16, scores that may overflow)
    and for the errors that need the whole matrix to be named."""
    scores = scaled_scores(q, k, mask, is_causal=is_causal, scale=scale)
    va = check_v(v, np.asarray(q), np.asarray(k))
    float_mask = mask is not None and np.asarray(mask).dtype != np.bool_
    if float_mask and scores.size and np.isposinf(scores.max()):
        # Adding a float mask pushed a score past the largest float; refuse
        # it with the error that softmax gives for +inf.
        as_float_array(scores, "x", allow_neg_inf=True)
    # The scores are a fresh array that nothing else refers to, and they are
    # already checked: the softmax can turn them into the weights in place.
    weights = softmax_of_checked(scores, -1, overwrite=True)
    out = weights @ va
    return (out, weights) if return_weights else out


class _Strips(NamedTuple):
    """The reference's softmax and products, one strip of whole rows at a time.

    A strip (:func:`lib.tiles.choose_strip`) holds as many rows of scores as
    fit in half the processor's L2 cache, so every elementwise pass over it
    reads and writes the cache instead of main memory. Each row is still
    complete, so the softmax is the ordinary one: shift by the row's maximum,
    ``exp``, divide by the row's sum. When :func:`lib._scores.shift_free`
    proves that no ``exp(score)`` can leave the float range, the shift
    (a maximum and a subtraction) is skipped: the softmax does not change
    when a row is shifted. The division by the row sums is applied to the
    ``n_q x d_v`` output rather than to the ``n_q x n_k`` weights.
    """

    factor: float
    is_causal: bool
    shift_free: bool

    def attend(
        self,
        qa: np.ndarray,
        ka: np.ndarray,
        va: np.ndarray,
        mask: np.ndarray | None,
        batch: tuple[int, ...],
        return_weights: bool,
    ) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The output (and the weights if asked), or (None, None) if a float
        mask made a score +inf."""
        n_q, n_k, d_k, d_v = qa.shape[-2], ka.shape[-2], qa.shape[-1], va.shape[-1]
        lead = batch or (1,)
        views = [np.broadcast_to(a, (*lead, *a.shape[-2:])) for a in (qa, ka, va)]
        mask_view = None if mask is None else np.broadcast_to(mask, (*lead, n_q, n_k))
        score_dtype = np.result_type(qa, ka)
        out = np.empty((*lead, n_q, d_v), dtype=np.result_type(score_dtype, va))
        # The reference keeps every weight, as the definition writes them (a
        # strip is computed into its rows). Under the causal mask a strip
        # never computes the keys after its last query: their weights stay 0.
        weights = (np.zeros if self.is_causal else np.empty)((*lead, n_q, n_k), dtype=score_dtype)
        strip = choose_strip(n_q, n_k, d_k, d_v, score_dtype.itemsize, heads=lead[-1])
        for outer in np.ndindex(*lead[:-1]):
            for h0 in range(0, lead[-1], strip.heads):
                heads = (*outer, slice(h0, h0 + strip.heads))
                q_h, k_h, v_h = (a[heads] for a in views)
                # Scaling the n_q x d_k queries costs less than scaling the scores.
                q_h = q_h * self.factor
                k_t = np.swapaxes(k_h, -1, -2)
                for i0 in range(0, n_q, strip.rows):
                    i1 = min(i0 + strip.rows, n_q)
                    n_seen = min(n_k, i1) if self.is_causal else n_k
                    strip_of = (*heads, slice(i0, i1))
                    s = weights[strip_of][..., :n_seen]
                    m = None if mask_view is None else mask_view[strip_of][..., :n_seen]
                    inputs = (q_h[..., i0:i1, :], k_t[..., :n_seen], v_h[..., :n_seen, :], m)
                    if not self._strip(*inputs, i0, s, out[strip_of], return_weights):
                        return None, None
        shape = (*batch, n_q)
        return out.reshape((*shape, d_v)), weights.reshape((*shape, n_k)) if return_weights else None

    def _strip(
        self,
        q: np.ndarray,
        k_t: np.ndarray,
        v: np.ndarray,
        mask: np.ndarray | None,
        i0: int,
        s: np.ndarray,
        out: np.ndarray,
        normalise: bool,
    ) -> bool:
        """Compute one strip of weights in ``s`` and its output in ``out``;
        False if a float mask made a score +inf. The weights are divided by
        their row sums only if ``normalise`` (the output is divided instead)."""
        np.matmul(q, k_t, out=s)
        rows, cols = s.shape[-2], s.shape[-1]
        allowed = np.tri(rows, cols, i0, dtype=bool) if self.is_causal and cols - 1 > i0 else None
        if mask is not None or allowed is not None:
            apply_mask(s, mask, allowed)
        if not self.shift_free:
            top = s.max(axis=-1, keepdims=True)
            if mask is not None and np.isposinf(top).any():
                return False
            # A row of only -inf (a query with no permitted key) has no finite
            # maximum; shifting it by 0 keeps every exp an exact 0.
            top[np.isneginf(top)] = 0
            s -= top
        np.exp(s, out=s)
        total = s.sum(axis=-1, keepdims=True)
        total[total == 0] = 1  # a query with no permitted key: zero weights, zero output
        np.divide(s @ v, total, out=out)
        if normalise:
            s /= total
        return True


def attend_one_query(
    q_i: Any,
    k: Any,
    v: Any,
    *,
    allowed: Any | None = None,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Attention for a single query, step by step (the loop form).

    Computes ``e_j = q_i . k_j``, ``s_j = e_j * scale``, ``a = softmax(s)``
    over the permitted keys, and ``o_i = sum_j a_j v_j``. Looping it over
    every query gives the same result as :func:`scaled_dot_product_attention`.

    Parameters
    ----------
    q_i : array_like, shape (d_k,)
    k : array_like, shape (n_k, d_k)
    v : array_like, shape (n_k, d_v)
    allowed : array_like of bool, shape (n_k,), optional
        True for each key this query may attend to (default: all).
    scale : float, optional
        Defaults to ``1 / sqrt(d_k)``.

    Returns
    -------
    (o_i, a_i) : the output vector (d_v,) and the weights (n_k,).

    Examples
    --------
    >>> o, a = attend_one_query([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], [[2.0, 3.0], [4.0, 5.0]])
    >>> print(np.round(a, 8), np.round(o, 8))
    [0.66976155 0.33023845] [2.6604769 3.6604769]
    """
    qa = as_float_array(q_i, "q_i", min_ndim=1, layout="(d_k,)")
    if qa.ndim != 1:
        raise ValueError(f"q_i must have shape (d_k,); got shape {qa.shape}")
    ka, va = (as_float_array(a, n, min_ndim=2) for a, n in ((k, "k"), (v, "v")))
    if ka.ndim != 2 or ka.shape[1] != qa.shape[0]:
        raise ValueError(f"k must have shape (n_k, d_k) = (n_k, {qa.shape[0]}); got shape {ka.shape}")
    if va.ndim != 2 or va.shape[0] != ka.shape[0]:
        raise ValueError(f"v must have shape (n_k, d_v) = ({ka.shape[0]}, d_v); got shape {va.shape}")
    permitted = np.ones(ka.shape[0], dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if permitted.shape != (ka.shape[0],):
        raise ValueError(f"allowed must have shape (n_k,) = ({ka.shape[0]},); got shape {permitted.shape}")
    factor = check_scale(scale, qa.shape[0])
    e = np.array([np.dot(qa, ka[j]) for j in range(ka.shape[0])])
    s = e * factor
    a = softmax(np.where(permitted, s, -np.inf))
    o = np.zeros(va.shape[1], dtype=a.dtype)
    for j in np.flatnonzero(permitted):
        o += a[j] * va[j]
    return o, a
