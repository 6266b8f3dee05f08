"""Homework 10: the Transformer block (LayerNorm, the feed-forward layer, pre-LN and post-LN).

Learner functions (chapter 10's notation):

``layer_norm(x, gain, bias, eps=1e-5)``
    Each row of ``x`` (..., d_model) normalised over its last axis,
    ``(x - mu) / sqrt(sigma^2 + eps) * gain + bias`` (sigma^2 divides by
    d_model).
``feed_forward(x, w_1, b_1, w_2, b_2)``
    ``max(0, x W_1 + b_1) W_2 + b_2``, row by row.
``pre_ln_block(x, attn, ffn, ln_1, ln_2, n_heads)``
    ``H = X + MultiHead(LN_1(X))``, ``out = H + FFN(LN_2(H))``, causal.
``post_ln_block(x, attn, ffn, ln_1, ln_2, n_heads)``
    ``H = LN_1(X + MultiHead(X))``, ``out = LN_2(H + FFN(H))``, causal.

``attn`` is ``(w_q, w_k, w_v, w_o)``, ``ffn`` is ``(w_1, b_1, w_2, b_2)``,
``ln_1`` and ``ln_2`` are ``(gain, bias)``. The blocks call the learner's
``causal_self_attention`` (not graded on its own). Expected values come from
``lib.layer_norm``, ``lib.feed_forward`` and ``lib.transformer_block(...,
is_causal=True)``.

Tolerances (u = eps / 2 of the dtype, d = d_model). A LayerNorm computed
any sound way (two passes, ``np.var``, float64 inside, a loop, or the one-pass
``mean(x^2) - mu^2`` on rows whose mean is not far above their spread)
rounds the mean and the centred entries by about ``(d + 2) u M`` for entries
up to M, which the division by ``s = sqrt(sigma^2 + eps)`` turns into
``(d + 2) u kappa`` with ``kappa = M / s`` (the row's conditioning), added to
each entry; the rounding of the variance (of order ``d u kappa^2`` in the
one-pass formula) multiplies the normalised entry y. So
:func:`layer_norm_tolerance` allows, entry by entry, the dtype's base
tolerance plus ``4 eps (1 + d)`` relative to
``|gain| ((1 + kappa) + (1 + kappa)^2 |y|) + |bias|``: a constant row (y = 0,
kappa up to M / sqrt(eps)) gets the room its rounding needs without loosening
its neighbours. The feed-forward layer is two matrix products
of ``d`` and ``d_ff`` terms and a ReLU (which never enlarges an error):
``4 eps (d + d_ff + 2)`` relative to the same products on absolute values.
A block chains them: each stage's error is amplified by the stages after it,
the softmax by ``1 + B`` (B the largest scaled score) and each LayerNorm by
``1 + kappa`` of its input, so :func:`block_tolerance` takes
``4 eps (1 + T)(1 + B)(1 + kappa_1)(1 + kappa_2)`` with T the sum of the
lengths of the sums (d, d_ff, d_k, n). The mistakes named below change the
values by a fraction of order one, far above these bounds;
``tests/test_homework_tolerances.py`` grades independent correct
implementations with them.

Partial credit beyond the shares of :func:`grading.authoring.judge_each`: a
block case that is right but for a mistake of the learner's own
``layer_norm`` or ``feed_forward`` (which their own checks already charge)
earns :data:`CARRIED_SHARE` of the case, and the message says which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .authoring import BATCHES, DTYPES, describe_inputs, generator, judge_each, normal
from .check import Assignment
from .compare import RTOL, Mismatch, Partial, check_form, compare_arrays, matches, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case

A = Assignment("hw10_transformer_block", chapter="chapters/10_attention_in_its_block.md")

#: The LayerNorms' eps, as in lib and PyTorch.
EPS = 1e-5
#: Share of a block case earned when the block is right but for a mistake of the learner's
#: layer_norm or feed_forward, which their own checks already charge.
CARRIED_SHARE = 0.5


def _eps(dtype: DTypeLike) -> float:
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype if dtype.kind == "f" else np.float64).eps)


def _base(dtype: DTypeLike) -> float:
    return RTOL.get(np.dtype(dtype).name, RTOL["float64"])


# ------------------------------------------------------------- the pieces and their usual mistakes

#: LayerNorm mistakes, by name: the hint that names each.
LN_HINTS = {
    "wrong_axis": (
        "it matches normalising each column (one feature over all the tokens, axis -2) instead of each row: "
        "LayerNorm normalises each token vector over its own d_model entries; take the mean and the variance "
        "over the last axis, axis=-1, with keepdims=True"
    ),
    "first_axis": (
        "it matches normalising over the first axis (axis=0: across the tokens, or across a batch) instead of "
        "each row: LayerNorm normalises each token vector over its own d_model entries; take the mean and the "
        "variance over the last axis, axis=-1, with keepdims=True"
    ),
    "whole_array": (
        "it matches one mean and one variance for the whole array: LayerNorm normalises each token vector "
        "(each row) on its own; take the mean and the variance over the last axis, axis=-1, with keepdims=True"
    ),
    "eps_outside": (
        "it matches (x - mean) / (sqrt(var) + eps): eps belongs inside the square root, "
        "(x - mean) / sqrt(var + eps); the two differ most for a row whose variance is not much larger than eps"
    ),
    "ddof_1": (
        "it matches the variance divided by d_model - 1 (ddof=1): LayerNorm's variance is the mean of the "
        "squared deviations, divided by d_model (np.var's default, ddof=0)"
    ),
    "no_eps": (
        "it matches dividing by sqrt(var) without eps: a nearly constant row is then divided by almost 0, and a "
        "constant row gives 0 / 0 = NaN; divide by sqrt(var + eps)"
    ),
    "no_centring": (
        "it matches dividing x by the root of the mean of x^2 without subtracting the mean first: subtract "
        "the row's mean mu, then divide by sqrt(var + eps)"
    ),
    "no_gain_bias": "it matches the normalised rows without the gain and the bias: multiply by gain, then add bias",
    "swapped": "it matches gain and bias swapped: multiply the normalised rows by gain, then add bias",
    "fixed_eps": "it matches eps = 1e-5, but this case passes another eps: use the eps argument",
}

#: Feed-forward mistakes, by name: the hint that names each.
FFN_HINTS = {
    "no_relu": (
        "it matches (x W_1 + b_1) W_2 + b_2 without the ReLU: the hidden layer is max(0, x W_1 + b_1); "
        "without it the two products collapse into one matrix product"
    ),
    "relu_on_output": (
        "it matches a ReLU on the output as well: FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, and only the "
        "hidden layer goes through the ReLU"
    ),
    "b_1_after_relu": "it matches b_1 added after the ReLU: the hidden layer is max(0, x W_1 + b_1)",
    "no_biases": "it matches max(0, x W_1) W_2 without the biases b_1 and b_2",
}


def ln_variant(x: np.ndarray, gain: Any, bias: Any, eps: float = EPS, mistake: str | None = None) -> np.ndarray:
    """LayerNorm in float64, right (``mistake=None``) or with one of :data:`LN_HINTS`'s mistakes."""
    z = np.asarray(x, dtype=np.float64)
    g, b = np.asarray(gain, dtype=np.float64), np.asarray(bias, dtype=np.float64)
    axis: int | tuple[int, ...] | None = -1
    if mistake == "wrong_axis":
        axis = -2
    elif mistake == "first_axis":
        axis = 0
    elif mistake == "whole_array":
        axis = None
    mu = z.mean(axis=axis, keepdims=True)
    var = ((z - mu) ** 2).mean(axis=axis, keepdims=True)
    y: np.ndarray
    with np.errstate(all="ignore"):
        if mistake == "ddof_1":
            var = var * z.shape[-1] / (z.shape[-1] - 1)
        if mistake == "fixed_eps":
            eps = EPS
        if mistake == "eps_outside":
            y = (z - mu) / (np.sqrt(var) + eps)
        elif mistake == "no_eps":
            y = (z - mu) / np.sqrt(var)
        elif mistake == "no_centring":
            y = z / np.sqrt((z * z).mean(axis=-1, keepdims=True) + eps)
        else:
            y = (z - mu) / np.sqrt(var + eps)
    if mistake == "no_gain_bias":
        return y
    out: np.ndarray = y * b + g if mistake == "swapped" else y * g + b
    return out


def ffn_variant(x: np.ndarray, w_1: Any, b_1: Any, w_2: Any, b_2: Any, mistake: str | None = None) -> np.ndarray:
    """The feed-forward layer in float64, right or with one of :data:`FFN_HINTS`'s mistakes."""
    z, w1, b1, w2, b2 = (np.asarray(a, dtype=np.float64) for a in (x, w_1, b_1, w_2, b_2))
    if mistake == "no_relu":
        hidden = z @ w1 + b1
    elif mistake == "b_1_after_relu":
        hidden = np.maximum(z @ w1, 0) + b1
    elif mistake == "no_biases":
        hidden, b2 = np.maximum(z @ w1, 0), np.zeros_like(b2)
    else:
        hidden = np.maximum(z @ w1 + b1, 0)
    out: np.ndarray = hidden @ w2 + b2
    return np.maximum(out, 0) if mistake == "relu_on_output" else out


def layer_norm_tolerance(x: np.ndarray, gain: Any, bias: Any, eps: float = EPS) -> tuple[float, np.ndarray]:
    """(rtol, scale) of a LayerNorm of ``x``, the scale entry by entry (see the module's docstring).

    rtol is the dtype's base tolerance plus ``4 eps (1 + d)``; the scale of an
    entry is ``|gain| ((1 + kappa) + (1 + kappa)^2 |y|) + |bias|`` with kappa
    its row's conditioning and y the normalised entry: the rounding of the
    centred entries adds ``kappa`` absolutely, that of the variance
    (squared in the one-pass formula) multiplies y.
    """
    z = np.asarray(x, dtype=np.float64)
    d = z.shape[-1] if z.ndim else 1
    rtol = _base(x.dtype) + 4 * _eps(x.dtype) * (1 + d)
    if z.size == 0:
        return rtol, np.ones(z.shape)
    kappa = np.abs(z).max(axis=-1, keepdims=True) / np.sqrt(z.var(axis=-1, keepdims=True) + eps)
    y = np.abs(ln_variant(z, np.ones(d), np.zeros(d), eps))
    g, b = np.abs(np.asarray(gain, dtype=np.float64)), np.abs(np.asarray(bias, dtype=np.float64))
    scale: np.ndarray = np.maximum(1.0, g * ((1 + kappa) + (1 + kappa) ** 2 * y) + b)
    return rtol, scale


def _ln_scale(x: np.ndarray, gain: Any, bias: Any, eps: float = EPS) -> float:
    """The size of what a LayerNorm's entries are made of: max |gain| (1 + |y|) + |bias|."""
    y = ln_variant(x, np.ones(x.shape[-1]), np.zeros(x.shape[-1]), eps)
    g, b = np.abs(np.asarray(gain, dtype=np.float64)), np.abs(np.asarray(bias, dtype=np.float64))
    return max(1.0, float((g * (1 + np.abs(y)) + b).max(initial=0.0)))


def _ffn_bound(x: np.ndarray, w_1: Any, b_1: Any, w_2: Any, b_2: Any) -> np.ndarray:
    """The feed-forward layer on absolute values: what any rounding error is relative to."""
    z, w1, b1, w2, b2 = (np.abs(np.asarray(a, dtype=np.float64)) for a in (x, w_1, b_1, w_2, b_2))
    out: np.ndarray = (z @ w1 + b1) @ w2 + b2
    return out


# ------------------------------------------------------------- layer_norm


def _ln_case(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, note: str = "", **kwargs: Any) -> Case:
    label = describe_inputs(x=x, gain=gain, bias=bias) + (f", {note}" if note else "")
    if "eps" in kwargs:
        label += f", eps = {kwargs['eps']:g}"
    return make_case("layer_norm", x, gain, bias, label=label, **kwargs)


def _gain_bias(gen: np.random.Generator, d: int, dtype: DTypeLike) -> tuple[np.ndarray, np.ndarray]:
    return (1 + normal(gen, (d,), np.float64, 0.3)).astype(dtype), normal(gen, (d,), dtype, 0.5)


def _ln_visible(seed: int) -> list[Case]:
    lib = reference()
    _, x = lib.example_sentence(d_model=8)
    gen = generator(seed, 1)
    rows = normal(gen, (2, 3, 5), np.float32, 2.0) + np.float32(1.0)
    rows[0, 1] = normal(gen, (5,), np.float32, 1e-3)  # spread 1e-3: a variance below eps
    rows[1, 2] = np.float32(0.75)  # a constant row
    g32, b32 = _gain_bias(gen, 5, np.float32)
    g4, b4 = _gain_bias(gen, 4, np.float64)
    return [
        _ln_case(x, np.ones(8), np.zeros(8), "the example sentence, gain 1 and bias 0"),
        _ln_case(np.array([1.0, 2.0, 3.0, 6.0]), g4, b4, "one token vector"),
        _ln_case(rows, g32, b32, "a row of spread 1e-3 and a constant row"),
    ]


def _ln_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 2)
    out = []
    for i in range(8):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 2) % 2]
        n, d = int(gen.integers(2, 7)), int(gen.integers(2, 17))
        spread = 10.0 ** gen.uniform(-0.5, 1.5)
        x = normal(gen, (*lead, n, d), np.float64, spread) + spread * gen.uniform(-2, 2)
        x.reshape(-1, d)[0] = normal(gen, (d,), np.float64, 10.0 ** gen.uniform(-3.5, -2.5))  # variance below eps
        gain, bias = _gain_bias(gen, d, dtype)
        kwargs = {"eps": float((1e-3, 1e-6)[(i // 4) % 2])} if i % 4 == 3 else {}
        out.append(_ln_case(x.astype(dtype), gain, bias, "a row of variance below eps", **kwargs))
    return out


def _judge_ln(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, gain, bias = args
        eps = float(kwargs.get("eps", EPS))
        expected = lib.layer_norm(x, gain, bias, eps=eps)
        rtol, scale = layer_norm_tolerance(x, gain, bias, eps)
        try:
            compare_arrays(got, expected, what=name, rtol=rtol, scale=scale)
        except Mismatch as exc:
            for mistake, hint in LN_HINTS.items():
                if mistake in ("wrong_axis", "first_axis") and x.ndim < 2:
                    continue
                if mistake == "fixed_eps" and eps == EPS:
                    continue
                if matches(got, ln_variant(x, gain, bias, eps, mistake), rtol, scale):
                    raise Mismatch(f"{exc}. Hint: {hint}") from None
            raise

    return f"{judge_each(cases, results, one)} cases match lib.layer_norm"


# ------------------------------------------------------------- feed_forward


def _ffn_weights(gen: np.random.Generator, d: int, f: int, dtype: DTypeLike) -> list[np.ndarray]:
    return [
        normal(gen, (d, f), dtype, d**-0.5),
        normal(gen, (f,), dtype, 0.5),
        normal(gen, (f, d), dtype, f**-0.5),
        normal(gen, (d,), dtype, 0.5),
    ]


def _ffn_case(x: np.ndarray, weights: list[np.ndarray], note: str = "") -> Case:
    w_1, b_1, w_2, b_2 = weights
    label = describe_inputs(x=x, w_1=w_1, w_2=w_2) + (f", {note}" if note else "")
    return make_case("feed_forward", x, w_1, b_1, w_2, b_2, label=label)


def _ffn_visible(seed: int) -> list[Case]:
    lib = reference()
    _, x = lib.example_sentence(d_model=8)
    gen = generator(seed, 3)
    w1 = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    small = [w1, np.array([0.0, 0.5, 0.0]), np.ones((3, 2)), np.array([0.0, -1.0])]
    return [
        _ffn_case(np.array([[1.0, -1.0]]), small, "the hidden layer max(0, [1, -0.5, -1])"),
        _ffn_case(x, _ffn_weights(gen, 8, 32, np.float64), "the example sentence, d_ff = 32"),
        _ffn_case(normal(gen, (2, 3, 4), np.float32), _ffn_weights(gen, 4, 16, np.float32), "a batch"),
    ]


def _ffn_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 4)
    out = []
    for i in range(6):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 2) % 2]
        n, d = int(gen.integers(1, 7)), int(gen.integers(1, 9))
        f = int(gen.integers(1, 5)) * d
        x = normal(gen, (*lead, n, d), dtype, 10.0 ** gen.uniform(-0.5, 1))
        out.append(_ffn_case(x, _ffn_weights(gen, d, f, dtype)))
    return out


def _judge_ffn(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, w_1, b_1, w_2, b_2 = args
        expected = lib.feed_forward(x, w_1, b_1, w_2, b_2)
        d, f = w_1.shape
        rtol = _base(x.dtype) + 4 * _eps(x.dtype) * (d + f + 2)
        scale = max(1.0, float(_ffn_bound(x, w_1, b_1, w_2, b_2).max(initial=0.0)))
        if isinstance(got, np.ndarray) and got.shape == x.shape[:-1] + (f,) and f != d:
            raise Mismatch(
                f"{name} returned shape {got.shape}, the shape of the hidden layer (..., n, d_ff); expected "
                f"shape {expected.shape}: multiply the hidden layer by W_2 (and add b_2) to bring each row "
                "back to width d_model"
            )
        try:
            compare_arrays(got, expected, what=name, rtol=rtol, scale=scale)
        except Mismatch as exc:
            for mistake, hint in FFN_HINTS.items():
                if matches(got, ffn_variant(x, w_1, b_1, w_2, b_2, mistake), rtol, scale):
                    raise Mismatch(f"{exc}. Hint: {hint}") from None
            raise

    return f"{judge_each(cases, results, one)} cases match lib.feed_forward"


# ------------------------------------------------------------- the blocks

Pieces = tuple[Any, Any, Any, Any]


def _attend(z: np.ndarray, attn: Pieces, n_heads: int, causal: bool = True) -> np.ndarray:
    lib = reference()
    out: np.ndarray = lib.multi_head_attention(z, *(np.asarray(w, np.float64) for w in attn), n_heads, is_causal=causal)
    return out


def block_variant(
    x: np.ndarray,
    attn: Pieces,
    ffn: Pieces,
    ln_1: tuple[Any, Any],
    ln_2: tuple[Any, Any],
    n_heads: int,
    *,
    norm: str,
    structure: str | None = None,
    ln_mistake: str | None = None,
    ffn_mistake: str | None = None,
) -> np.ndarray:
    """A causal block in float64, right or with one mistake of its structure or of its pieces.

    ``structure`` names a way of putting the pieces together wrongly (see
    :data:`BLOCK_HINTS`); ``ln_mistake`` and ``ffn_mistake`` one of
    :data:`LN_HINTS` and :data:`FFN_HINTS`, made in every LayerNorm or in
    the feed-forward layer.
    """
    z = np.asarray(x, dtype=np.float64)
    first, second = (ln_2, ln_1) if structure == "norms_swapped" else (ln_1, ln_2)
    if structure == "one_norm":
        second = ln_1

    def ln1(v: np.ndarray) -> np.ndarray:
        return ln_variant(v, *first, mistake=ln_mistake)

    def ln2(v: np.ndarray) -> np.ndarray:
        return ln_variant(v, *second, mistake=ln_mistake)

    def att(v: np.ndarray) -> np.ndarray:
        return _attend(v, attn, n_heads, causal=structure != "not_causal")

    def ff(v: np.ndarray) -> np.ndarray:
        return ffn_variant(v, *ffn, mistake=ffn_mistake)

    order = {"pre": "post", "post": "pre"}[norm] if structure == "other_order" else norm
    out: np.ndarray
    if order == "pre" and structure == "residual_after_norm":
        a = ln1(z)
        h = a + att(a)
        b = ln2(h)
        out = b + ff(b)
    elif order == "pre" and structure == "no_residual":
        out = ff(ln2(att(ln1(z))))
    elif order == "pre":
        h = z + att(ln1(z))
        tail = {"no_second_norm": h, "ffn_reads_x": ln2(z)}.get(structure or "", None)
        out = h + ff(ln2(h) if tail is None else tail)
    elif structure == "no_residual":
        out = ln2(ff(ln1(att(z))))
    else:
        h = ln1(z + att(z))
        out = ln2((z if structure == "second_residual_from_x" else h) + ff(h))
    return out


#: Mistakes in putting a block together, by name: (the blocks it is tried on, the hint).
BLOCK_HINTS = {
    "residual_after_norm": (
        ("pre",),
        "it matches adding the LayerNorm's output instead of the stream: in pre-LN the residual adds the "
        "unnormalised input, H = X + MultiHead(LN_1(X)) and out = H + FFN(LN_2(H)); LN_1(X) + MultiHead(LN_1(X)) "
        "adds the residual after the norm",
    ),
    "other_order": (
        ("pre", "post"),
        "it matches the block in the other order (pre-LN normalises the input of each sub-layer, "
        "X + MultiHead(LN_1(X)); post-LN normalises after each addition, LN_1(X + MultiHead(X)))",
    ),
    "not_causal": (
        ("pre", "post"),
        "it matches the block without the causal mask: in causal_self_attention query i may read only "
        "keys j <= i (the mask of homework 6, before the softmax)",
    ),
    "no_residual": (
        ("pre", "post"),
        "it matches the block without its residual connections: each sub-layer's output is added to the "
        "stream it read, stream + F(stream)",
    ),
    "no_second_norm": (("pre",), "it matches a feed-forward layer that reads H itself: it must read LN_2(H)"),
    "ffn_reads_x": (
        ("pre",),
        "it matches a feed-forward layer that reads LN_2(X): it reads the stream after attention, LN_2(H)",
    ),
    "second_residual_from_x": (
        ("post",),
        "it matches the second addition using X: the feed-forward layer's residual adds H, its own input, "
        "out = LN_2(H + FFN(H))",
    ),
    "one_norm": (
        ("pre", "post"),
        "it matches using ln_1's gain and bias in both LayerNorms: the second LayerNorm has its own, ln_2",
    ),
    "norms_swapped": (
        ("pre", "post"),
        "it matches ln_1 and ln_2 swapped: ln_1 goes with attention, ln_2 with the feed-forward layer",
    ),
}

#: This module's named mistakes as usual-mistake keys, "hw10.<piece>.<mistake>" -> the table's hint
#: (grading.all_hints reads them alongside HINTS, so the corpus declares them by key).
MISTAKES: dict[str, str] = {
    **{f"hw10.ln.{k}": h for k, h in LN_HINTS.items()},
    **{f"hw10.ffn.{k}": h for k, h in FFN_HINTS.items()},
    **{f"hw10.block.{k}": h for k, (_, h) in BLOCK_HINTS.items()},
}


def block_tolerance(
    x: np.ndarray,
    attn: Pieces,
    ffn: Pieces,
    ln_1: tuple[Any, Any],
    ln_2: tuple[Any, Any],
    n_heads: int,
    norm: str,
) -> tuple[float, float]:
    """(rtol, scale) of a block's output; see the module's docstring for the derivation."""
    lib = reference()
    z = np.asarray(x, dtype=np.float64)
    n, d = z.shape[-2:]
    d_k, d_ff = d // n_heads, np.shape(ffn[0])[1]
    w_q, w_k, w_v, w_o = (np.asarray(w, np.float64) for w in attn)
    att_in = ln_variant(z, *ln_1) if norm == "pre" else z
    q, k = lib.split_heads(att_in @ w_q, n_heads), lib.split_heads(att_in @ w_k, n_heads)
    big = float(np.abs(q @ np.swapaxes(k, -1, -2)).max(initial=0.0)) / np.sqrt(d_k)
    att = _attend(att_in, attn, n_heads)
    att_bound = (np.abs(att_in) @ np.abs(w_v)).max(axis=-1, keepdims=True) * np.abs(w_o).sum(axis=0)
    if norm == "pre":
        h = z + att
        first, second = z, h
        scale = float((np.abs(z) + att_bound + _ffn_bound(ln_variant(h, *ln_2), *ffn)).max(initial=0.0))
    else:
        h = ln_variant(z + att, *ln_1)
        first, second = z + att, h + ffn_variant(h, *ffn)
        scale = _ln_scale(second, *ln_2)

    def kappa(v: np.ndarray) -> float:
        return float((np.abs(v).max(axis=-1, keepdims=True) / np.sqrt(v.var(axis=-1, keepdims=True) + EPS)).max())

    terms = d + d_ff + d_k + n
    amplification = (1 + terms) * (1 + big) * (1 + kappa(first)) * (1 + kappa(second))
    return _base(x.dtype) + 4 * _eps(x.dtype) * amplification, max(1.0, scale)


def _block_case(
    call: str, x: np.ndarray, attn: list[np.ndarray], ffn: list[np.ndarray], lns: list[np.ndarray], h: int, note: str
) -> Case:
    label = describe_inputs(x=x, w_q=attn[0], w_1=ffn[0]) + f", n_heads = {h}" + (f", {note}" if note else "")
    return make_case(call, x, tuple(attn), tuple(ffn), tuple(lns[:2]), tuple(lns[2:]), h, label=label)


def _block_visible(call: str) -> Callable[[int], list[Case]]:
    def cases(seed: int) -> list[Case]:
        lib = reference()
        _, x = lib.example_sentence(d_model=8)
        w = lib.random_block_weights(8, 32, seed=10)
        gen = generator(seed, 5)
        chapter = (
            [w.w_q, w.w_k, w.w_v, w.w_o],
            [w.w_1, w.b_1, w.w_2, w.b_2],
            [w.gain_1, w.bias_1, w.gain_2, w.bias_2],
        )
        attn, ffn, lns = _block_weights(gen, 8, 16, np.float64)
        x32 = normal(gen, (2, 5, 6), np.float32)
        weights32 = _block_weights(gen, 6, 12, np.float32)
        return [
            _block_case(call, x, *chapter, 2, "chapter 10's starting weights"),
            _block_case(call, 3 * x, attn, ffn, lns, 4, "random gains, biases and weights"),
            _block_case(call, x32, *weights32, 3, "a batch"),
        ]

    return cases


def _block_weights(
    gen: np.random.Generator, d: int, f: int, dtype: DTypeLike
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    attn = [normal(gen, (d, d), dtype, d**-0.5) for _ in range(4)]
    g1, b1 = _gain_bias(gen, d, dtype)
    g2, b2 = _gain_bias(gen, d, dtype)
    return attn, _ffn_weights(gen, d, f, dtype), [g1, b1, g2, b2]


def _block_hidden(call: str, salt: int) -> Callable[[int], list[Case]]:
    def cases(seed: int) -> list[Case]:
        gen = generator(seed, salt)
        out = []
        for i in range(6):
            lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 2) % 2]
            h = (1, 2, 4)[i % 3]
            low = max(1, 4 // h)  # d_model >= 4: a LayerNorm of 2 entries gives only +-1
            d = h * int(gen.integers(low, low + 3))
            n, f = int(gen.integers(2, 7)), int(gen.integers(1, 5)) * d
            x = normal(gen, (*lead, n, d), dtype, 10.0 ** gen.uniform(-0.3, 0.7))
            out.append(_block_case(call, x, *_block_weights(gen, d, f, dtype), h, ""))
        return out

    return cases


def _judge_block(norm: str) -> Callable[[list[Case], list[ResultRecord]], str]:
    def judge(cases: list[Case], results: list[ResultRecord]) -> str:
        lib = reference()

        def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
            x, attn, ffn, ln_1, ln_2, h = args
            weights = lib.BlockWeights(*attn, *ffn, *ln_1, *ln_2)
            expected = lib.transformer_block(x, weights, h, norm=norm, is_causal=True)
            check_form(got, expected, what=name)
            rtol, scale = block_tolerance(x, attn, ffn, ln_1, ln_2, h, norm)
            try:
                compare_arrays(got, expected, what=name, rtol=rtol, scale=scale)
            except Mismatch as exc:
                for structure, (blocks, hint) in BLOCK_HINTS.items():
                    if norm in blocks and matches(
                        got, block_variant(x, attn, ffn, ln_1, ln_2, h, norm=norm, structure=structure), rtol, scale
                    ):
                        raise Mismatch(f"{exc}. Hint: {hint}") from None
                carried = [("layer_norm", m, {"ln_mistake": m}) for m in LN_HINTS if m != "fixed_eps"]
                carried += [("feed_forward", m, {"ffn_mistake": m}) for m in FFN_HINTS]
                for piece, mistake, how in carried:
                    variant = block_variant(x, attn, ffn, ln_1, ln_2, h, norm=norm, **how)
                    if matches(got, variant, rtol, scale):
                        hint = (LN_HINTS if piece == "layer_norm" else FFN_HINTS)[mistake]
                        raise Partial(
                            f"{exc}. The block itself is put together right: the difference is your {piece}, "
                            f"whose own test names the mistake ({hint}); this case earns "
                            f"{CARRIED_SHARE:.0%} until {piece} is fixed",
                            CARRIED_SHARE,
                        ) from None
                raise

        return f"{judge_each(cases, results, one)} cases match lib.transformer_block(norm={norm!r}, is_causal=True)"

    return judge


A.add(
    "layer_norm",
    ["layer_norm"],
    points=1,
    cases=_ln_visible,
    judge=_judge_ln,
    description="the example sentence, one token vector, a float32 batch with a row of tiny spread and a constant row",
)
A.add(
    "layer_norm_hidden",
    ["layer_norm"],
    points=2,
    cases=_ln_hidden,
    judge=_judge_ln,
    description="random widths, spreads and offsets, rows of variance below eps, other eps, float32 and float64",
)
A.add(
    "feed_forward",
    ["feed_forward"],
    points=1,
    cases=_ffn_visible,
    judge=_judge_ffn,
    description="a two-token example by hand, the example sentence with d_ff = 32, a float32 batch",
)
A.add(
    "feed_forward_hidden",
    ["feed_forward"],
    points=1,
    cases=_ffn_hidden,
    judge=_judge_ffn,
    description="random widths, batch dimensions, float32 and float64",
)
A.add(
    "pre_ln_block",
    ["pre_ln_block"],
    points=1,
    cases=_block_visible("pre_ln_block"),
    judge=_judge_block("pre"),
    description="the example sentence with chapter 10's weights, random gains and biases, a float32 batch",
)
A.add(
    "pre_ln_block_hidden",
    ["pre_ln_block"],
    points=2,
    cases=_block_hidden("pre_ln_block", 6),
    judge=_judge_block("pre"),
    description="random sizes, 1, 2 or 4 heads, batch dimensions, float32 and float64",
)
A.add(
    "post_ln_block",
    ["post_ln_block"],
    points=1,
    cases=_block_visible("post_ln_block"),
    judge=_judge_block("post"),
    description="the same inputs as pre_ln_block",
)
A.add(
    "post_ln_block_hidden",
    ["post_ln_block"],
    points=1,
    cases=_block_hidden("post_ln_block", 7),
    judge=_judge_block("post"),
    description="random sizes, 1, 2 or 4 heads, batch dimensions, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_layer_norm = notebook_check(A, "layer_norm")
check_feed_forward = notebook_check(A, "feed_forward")
check_pre_ln_block = notebook_check(A, "pre_ln_block")
check_post_ln_block = notebook_check(A, "post_ln_block")
check_before_submit = before_submit_check(A)
