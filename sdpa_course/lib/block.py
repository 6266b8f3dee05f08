"""A Transformer block around the attention heads: LayerNorm, the position-wise
feed-forward layer, the residual connections, in the pre-LN or post-LN order.

Pre-LN (as in GPT-2)::

    h   = x + MultiHead(LayerNorm_1(x))
    out = h + FFN(LayerNorm_2(h))

Post-LN (the original Transformer)::

    h   = LayerNorm_1(x + MultiHead(x))
    out = LayerNorm_2(h + FFN(h))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ._checks import as_float_array, as_int
from .multihead import multi_head_attention

__all__ = ["BlockWeights", "layer_norm", "feed_forward", "transformer_block", "random_block_weights"]

LAYER_NORM_EPS = 1e-5


def _vector(value: Any, name: str, width: int, what: str) -> np.ndarray:
    """A float vector of shape (width,), or a clear error naming ``what`` it must match."""
    arr = as_float_array(value, name, min_ndim=1, layout=f"({width},)")
    if arr.shape != (width,):
        raise ValueError(f"{name} must have shape ({width},), one entry per {what}; got shape {arr.shape}")
    return arr


def _check_eps(eps: Any) -> float:
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.number)):
        raise TypeError(f"eps must be a real number; got {type(eps).__name__} {eps!r}")
    if not (math.isfinite(float(eps)) and eps > 0):
        raise ValueError(f"eps must be a positive finite number; got {eps!r}")
    return float(eps)


def layer_norm(x: Any, gain: Any | None = None, bias: Any | None = None, *, eps: float = LAYER_NORM_EPS) -> np.ndarray:
    """Normalise each token vector (the last axis) to mean 0 and variance 1, then
    multiply by ``gain`` and add ``bias``.

    ``y = (x - mean) / sqrt(var + eps) * gain + bias``, with the mean and the
    (biased, divide-by-d_model) variance taken over the last axis of each row.
    Without gain and bias (or with gain 1 and bias 0) each output row has
    length about sqrt(d_model).

    Parameters
    ----------
    x : array_like, shape (..., d_model)
    gain, bias : array_like, shape (d_model,), optional
        Default to ones and zeros (their values when a model is initialised).
    eps : float
        Added to the variance, so that a constant row does not divide by 0.

    Examples
    --------
    >>> layer_norm([[1.0, 2.0, 3.0, 6.0]])
    array([[-1.069, -0.535,  0.   ,  1.604]])
    >>> float(np.linalg.norm(layer_norm(np.arange(16.0))))   # about sqrt(16) = 4
    4.000
    >>> layer_norm([[1.0, 2.0]], gain=[1.0, 2.0, 3.0])
    Traceback (most recent call last):
    ...
    ValueError: gain must have shape (2,), one entry per column of x (d_model); got shape (3,)
    """
    xa = as_float_array(x, "x", min_ndim=1, layout="(..., d_model)")
    d_model = xa.shape[-1]
    if d_model == 0:
        raise ValueError(f"x must have at least one column (d_model >= 1); got shape {xa.shape}")
    e = _check_eps(eps)
    mean = xa.mean(axis=-1, keepdims=True)
    centred = xa - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    y: np.ndarray = centred / np.sqrt(var + xa.dtype.type(e))
    if gain is not None:
        y = y * _vector(gain, "gain", d_model, "column of x (d_model)").astype(xa.dtype, copy=False)
    if bias is not None:
        y = y + _vector(bias, "bias", d_model, "column of x (d_model)").astype(xa.dtype, copy=False)
    return y


def feed_forward(x: Any, w_1: Any, b_1: Any, w_2: Any, b_2: Any) -> np.ndarray:
    """The position-wise feed-forward layer: ``max(0, x W_1 + b_1) W_2 + b_2``.

    Each row (token) goes through the same two-layer network on its own; no
    token reads another.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
    w_1 : array_like, shape (d_model, d_ff)
    b_1 : array_like, shape (d_ff,)
    w_2 : array_like, shape (d_ff, d_model)
    b_2 : array_like, shape (d_model,)

    Returns
    -------
    numpy.ndarray, shape (..., n, d_model)

    Examples
    --------
    >>> x = np.array([[1.0, -1.0]])
    >>> w_1 = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # d_model 2 -> d_ff 3
    >>> w_2 = np.ones((3, 2))
    >>> feed_forward(x, w_1, np.zeros(3), w_2, np.zeros(2))   # hidden max(0, [1, -1, -1]) = [1, 0, 0]
    array([[1., 1.]])
    """
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n, d_model)")
    d_model = xa.shape[-1]
    w1 = as_float_array(w_1, "w_1", min_ndim=2, layout="(d_model, d_ff)")
    if w1.ndim != 2 or w1.shape[0] != d_model:
        raise ValueError(
            f"w_1 must have shape ({d_model}, d_ff), one row per column of x; x has shape {xa.shape}, "
            f"w_1 has shape {w1.shape}"
        )
    d_ff = w1.shape[1]
    b1 = _vector(b_1, "b_1", d_ff, "column of w_1 (d_ff)")
    w2 = as_float_array(w_2, "w_2", min_ndim=2, layout="(d_ff, d_model)")
    if w2.shape != (d_ff, d_model):
        raise ValueError(
            f"w_2 must have shape (d_ff, d_model) = ({d_ff}, {d_model}) to map the hidden layer back to the "
            f"width of x; got shape {w2.shape}"
        )
    b2 = _vector(b_2, "b_2", d_model, "column of x (d_model)")
    hidden = np.maximum(xa @ w1 + b1, 0)
    out: np.ndarray = hidden @ w2 + b2
    return out


@dataclass(frozen=True)
class BlockWeights:
    """The learned numbers of one Transformer block.

    Attention: ``w_q``, ``w_k``, ``w_v`` of shape (d_model, d_model) and
    ``w_o`` of shape (d_model, d_model) (no biases, as in
    :func:`~lib.multihead.multi_head_attention`). Feed-forward: ``w_1``
    (d_model, d_ff), ``b_1`` (d_ff,), ``w_2`` (d_ff, d_model), ``b_2``
    (d_model,). LayerNorms: ``gain_1``, ``bias_1`` (before or after
    attention) and ``gain_2``, ``bias_2`` (before or after the feed-forward
    layer), each of shape (d_model,).
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    w_1: np.ndarray
    b_1: np.ndarray
    w_2: np.ndarray
    b_2: np.ndarray
    gain_1: np.ndarray
    bias_1: np.ndarray
    gain_2: np.ndarray
    bias_2: np.ndarray


def random_block_weights(d_model: int, d_ff: int, *, seed: int = 0) -> BlockWeights:
    """Weights as a model starts training: each matrix entry drawn from a normal
    distribution of standard deviation 1/sqrt(fan-in) (the number of inputs
    the entry's output sums over), biases 0, LayerNorm gains 1 and biases 0.

    Examples
    --------
    >>> w = random_block_weights(8, 32, seed=1)
    >>> w.w_1.shape, w.w_2.shape, w.gain_1.shape
    ((8, 32), (32, 8), (8,))
    """
    d = as_int(d_model, "d_model", minimum=1)
    f = as_int(d_ff, "d_ff", minimum=1)
    rng = np.random.default_rng(seed)

    def draw(rows: int, cols: int) -> np.ndarray:
        return rng.normal(scale=1 / math.sqrt(rows), size=(rows, cols))

    w_q, w_k, w_v, w_o = (draw(d, d) for _ in range(4))
    return BlockWeights(
        w_q=w_q,
        w_k=w_k,
        w_v=w_v,
        w_o=w_o,
        w_1=draw(d, f),
        b_1=np.zeros(f),
        w_2=draw(f, d),
        b_2=np.zeros(d),
        gain_1=np.ones(d),
        bias_1=np.zeros(d),
        gain_2=np.ones(d),
        bias_2=np.zeros(d),
    )


def _check_attention_weights(weights: BlockWeights, x_shape: tuple[int, ...]) -> None:
    """Each of ``w_q``, ``w_k``, ``w_v``, ``w_o`` is (d_model, d_model) for x's width, or a clear error."""
    d_model = x_shape[-1]
    for name in ("w_q", "w_k", "w_v", "w_o"):
        shape = np.shape(getattr(weights, name))
        if shape != (d_model, d_model):
            raise ValueError(
                f"weights.{name} must have shape (d_model, d_model) = ({d_model}, {d_model}) for x of shape "
                f"{x_shape}; got shape {shape}"
            )


def transformer_block(
    x: Any,
    weights: BlockWeights,
    n_heads: int,
    *,
    norm: Literal["pre", "post"] = "pre",
    is_causal: bool = False,
    eps: float = LAYER_NORM_EPS,
) -> np.ndarray:
    """One Transformer block: multi-head self-attention and the feed-forward
    layer, each wrapped in a residual connection and a LayerNorm.

    ``norm="pre"`` normalises the input of each sub-layer and adds the
    sub-layer's output to the unnormalised stream::

        h = x + MultiHead(LN_1(x));   out = h + FFN(LN_2(h))

    ``norm="post"`` (the original Transformer) normalises after each addition::

        h = LN_1(x + MultiHead(x));   out = LN_2(h + FFN(h))

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
    weights : BlockWeights
    n_heads : int
        h, which must divide d_model.
    norm : "pre" or "post"
    is_causal : bool
        Token i reads only tokens j <= i in the attention.
    eps : float
        The LayerNorms' eps.

    Returns
    -------
    numpy.ndarray, shape (..., n, d_model)

    Examples
    --------
    >>> w = random_block_weights(8, 32, seed=0)
    >>> x = np.random.default_rng(1).normal(size=(5, 8))
    >>> transformer_block(x, w, n_heads=2).shape
    (5, 8)
    >>> transformer_block(x, w, n_heads=2, norm="middle")
    Traceback (most recent call last):
    ...
    ValueError: norm must be 'pre' or 'post'; got 'middle'
    """
    if not isinstance(weights, BlockWeights):
        raise TypeError(f"weights must be a lib.BlockWeights; got {type(weights).__name__}")
    if norm not in ("pre", "post"):
        raise ValueError(f"norm must be 'pre' or 'post'; got {norm!r}")
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n, d_model)")
    _check_attention_weights(weights, xa.shape)

    def attend(z: np.ndarray) -> np.ndarray:
        out = multi_head_attention(z, weights.w_q, weights.w_k, weights.w_v, weights.w_o, n_heads, is_causal=is_causal)
        assert isinstance(out, np.ndarray)
        return out

    def ffn(z: np.ndarray) -> np.ndarray:
        return feed_forward(z, weights.w_1, weights.b_1, weights.w_2, weights.b_2)

    def ln_1(z: np.ndarray) -> np.ndarray:
        return layer_norm(z, weights.gain_1, weights.bias_1, eps=eps)

    def ln_2(z: np.ndarray) -> np.ndarray:
        return layer_norm(z, weights.gain_2, weights.bias_2, eps=eps)

    if norm == "pre":
        h = xa + attend(ln_1(xa))
        pre_ln: np.ndarray = h + ffn(ln_2(h))
        return pre_ln
    h = ln_1(xa + attend(xa))
    return ln_2(h + ffn(h))
