"""Scaled dot-product attention, the reference implementation.

It follows the conventions of ``torch.nn.functional.scaled_dot_product_attention``:
row i is query i and column j is key j; leading dimensions broadcast; the scale
defaults to 1/sqrt(d_k) and is applied before the mask and the softmax; a
boolean mask means True = may attend, a float mask is added to the scaled
scores; a query with no permitted key gets zero weights and a zero output.

It is the definition, computed as the chapters write it: the whole score
matrix ``S = Q K^T * scale``, the mask, the row-wise softmax, the product
with V. Every chapter's number and every grade is compared against it.
Computing attention without the whole matrix, faster and in less memory, is
the job of :func:`lib.blocked_attention` (chapter 8).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import Scores, as_float_array, check_attention, check_scale, check_scores
from ._scores import apply_mask, scaled_scores_of_checked, softmax_of_checked
from .masks import causal_mask
from .softmax import softmax

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
    return _masked_scores(check_scores(q, k, mask, scale), is_causal)


def _masked_scores(args: Scores, is_causal: bool) -> np.ndarray:
    """``S = Q K^T * scale`` from checked arguments, then the mask: -inf where
    a query may not attend, a float mask added. A fresh array."""
    scores = scaled_scores_of_checked(args.q, args.k, args.factor)
    allowed = causal_mask(args.q.shape[-2], args.k.shape[-2]) if is_causal else None
    apply_mask(scores, args.mask, allowed)
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
    args, va = check_attention(q, k, v, mask, scale)
    # S = Q K^T / sqrt(d_k), then the mask: -inf where query i may not read key j.
    scores = _masked_scores(args, is_causal)
    if args.mask is not None and scores.size and np.isposinf(scores.max()):
        # A float mask pushed a score past the largest float: refuse it with
        # the error that softmax gives for +inf.
        as_float_array(scores, "x", allow_neg_inf=True)
    # A = softmax(S), row by row: shift by the row maximum, exp, divide by the
    # row sum; a row of only -inf (no permitted key) gets zero weights. The
    # scores are a fresh array of our own, so the weights may overwrite them.
    weights = softmax_of_checked(scores, axis=-1, overwrite=True)
    # O = A V: row i of the output mixes the values with query i's weights.
    out = weights @ va
    return (out, weights) if return_weights else out


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
