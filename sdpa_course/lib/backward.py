"""The backward pass of attention: gradients of a loss with respect to Q, K and V.

Training a head needs, for a number L computed from the output O (the
*loss*), the derivatives dL/dQ, dL/dK and dL/dV. Given ``grad_out`` = dL/dO,
the chain rule walks the forward computation backwards:

``dV = A^T dO``, ``dA = dO V^T``, ``dS = A * (dA - rowsum(dA * A))`` (the
softmax's Jacobian applied to dA), then through the scale and the scores
``S = scale * Q K^T``: ``dQ = scale * dS K`` and ``dK = scale * dS^T Q``.

The conventions are those of :func:`lib.scaled_dot_product_attention`: shapes
(..., n, d), boolean masks (True = may attend) or additive float masks,
``is_causal`` aligned at the top left. A forbidden key has weight 0, so no
gradient flows through it; a query with no permitted key has a zero output
and gets zero gradient (no NaN). Each gradient has the shape and the floating
dtype of its input: float32 stays float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_float_array, check_scale
from .attention import scaled_dot_product_attention

__all__ = ["softmax_backward", "attention_backward"]


def softmax_backward(weights: Any, grad_weights: Any, axis: int = -1) -> np.ndarray:
    """dL/ds from the softmax's output ``a = softmax(s)`` and ``dL/da``.

    The softmax's Jacobian is ``da_i/ds_j = a_i (delta_ij - a_j)``, so
    ``dL/ds_j = a_j (dL/da_j - sum_i a_i dL/da_i)`` along ``axis``: the
    incoming gradient minus its weighted average, times the weight. An
    entry with weight 0 (masked) gets gradient 0, and so does a slice of
    all-zero weights (a query with no permitted key).

    Parameters
    ----------
    weights : array_like
        The softmax's output (each slice along ``axis`` sums to 1, or is all 0).
    grad_weights : array_like, same shape as ``weights``
        dL/da, the gradient of the loss with respect to the weights.
    axis : int
        The axis along which the softmax was taken.

    Returns
    -------
    numpy.ndarray
        dL/ds, the same shape as ``weights``, in the floating dtype the two
        inputs combine to (float32 stays float32).

    Examples
    --------
    A uniform softmax over two entries, and a loss that grows with a_0:

    >>> softmax_backward([0.5, 0.5], [1.0, 0.0])
    array([ 0.25, -0.25])

    Adding a constant to dL/da changes nothing (the weights always sum to 1):

    >>> softmax_backward([0.5, 0.5], [11.0, 10.0])
    array([ 0.25, -0.25])
    """
    a = as_float_array(weights, "weights")
    g = as_float_array(grad_weights, "grad_weights")
    if a.shape != g.shape:
        raise ValueError(f"grad_weights must have the shape of weights {a.shape}; got shape {g.shape}")
    if a.ndim == 0:
        raise ValueError("weights must have at least one dimension; got shape ()")
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis {axis} is out of range for weights of shape {a.shape}")
    dtype = np.result_type(a, g)
    a, g = a.astype(dtype, copy=False), g.astype(dtype, copy=False)
    grad: np.ndarray = a * (g - np.sum(g * a, axis=axis, keepdims=True))
    return grad


def _reduce_to(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` over the leading dimensions that broadcasting added to ``shape``."""
    extra = grad.ndim - len(shape)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad


def attention_backward(
    q: Any,
    k: Any,
    v: Any,
    grad_out: Any,
    mask: Any | None = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients ``(dq, dk, dv)`` of a loss, given ``grad_out`` = dL/dO.

    ``O = softmax(Q K^T * scale + mask) V`` as in
    :func:`lib.scaled_dot_product_attention` (same arguments, same
    conventions). The weights are recomputed here.

    Parameters
    ----------
    q : array_like, shape (..., n_q, d_k)
    k : array_like, shape (..., n_k, d_k)
    v : array_like, shape (..., n_k, d_v)
    grad_out : array_like, shape of the output (..., n_q, d_v)
        dL/dO; its leading dimensions are those q, k and v broadcast to.
    mask : array_like of bool or float, optional
        As in :func:`lib.scaled_dot_product_attention`. No gradient flows
        into it.
    is_causal : bool
        Forbid key j for query i when j > i (top-left aligned).
    scale : float, optional
        Defaults to ``1 / sqrt(d_k)``.

    Returns
    -------
    (dq, dk, dv) : numpy.ndarray
        Each with the shape and floating dtype of q, k and v. A dimension
        that was broadcast is summed over, as the chain rule requires.

    Examples
    --------
    Seed 002's toy example with L = the sum of the output's entries
    (so dL/dO is all ones):

    >>> from sdpa_course.lib.examples import seed_toy_example
    >>> ex = seed_toy_example()
    >>> dq, dk, dv = attention_backward(ex["q"], ex["k"], ex["v"], np.ones((1, 2)))
    >>> dv                    # each value row gets its weight
    array([[0.66976155, 0.66976155],
           [0.33023845, 0.33023845]])
    >>> dq                    # raising q_0 would shift weight to the smaller value row
    array([[-0.62559439,  0.62559439]])
    """
    out, weights = scaled_dot_product_attention(q, k, v, mask, is_causal=is_causal, scale=scale, return_weights=True)
    qa, ka, va = (as_float_array(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v")))
    factor = check_scale(scale, qa.shape[-1])
    g = as_float_array(grad_out, "grad_out", min_ndim=2, layout="(..., n_q, d_v)")
    if g.shape != out.shape:
        raise ValueError(f"grad_out must have the shape of the output {out.shape} (..., n_q, d_v); got shape {g.shape}")
    dtype = np.result_type(weights, g)
    a, g = weights.astype(dtype, copy=False), g.astype(dtype, copy=False)
    dv = np.swapaxes(a, -1, -2) @ g  # (..., n_k, d_v)
    grad_weights = g @ np.swapaxes(va.astype(dtype, copy=False), -1, -2)  # (..., n_q, n_k)
    grad_scores = softmax_backward(a, grad_weights)  # zero where the weight is zero
    grad_scores *= factor
    dq = grad_scores @ ka.astype(dtype, copy=False)  # (..., n_q, d_k)
    dk = np.swapaxes(grad_scores, -1, -2) @ qa.astype(dtype, copy=False)  # (..., n_k, d_k)
    return (
        _reduce_to(dq, qa.shape).astype(qa.dtype, copy=False),
        _reduce_to(dk, ka.shape).astype(ka.dtype, copy=False),
        _reduce_to(dv, va.shape).astype(va.dtype, copy=False),
    )
