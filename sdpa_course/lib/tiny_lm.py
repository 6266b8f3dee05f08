"""A tiny attention-only language model, trained in numpy to read repeated text.

The model (after Elhage et al.'s "attention-only transformers"): a token
embedding ``W_E`` (vocab x d_model) and a learned position embedding ``W_pos``
(n x d_model) are added to form the *residual stream* ``x``; each of two
layers adds the output of its causal multi-head attention to the stream,
``x <- x + sum_g softmax(q_g k_g^T / sqrt(d_head)) v_g W_O,g`` over its heads
``g``; an *unembedding* ``W_U`` (d_model x vocab) turns the last stream into
logits, one score per possible next token. No LayerNorm, no MLP, no biases.

The task: each sequence is a block of ``half`` random tokens, then the same
block again. The first half cannot be predicted; the second half can, for
example by finding where the current token occurred before and copying the
token that followed it. Two heads working together do that: a *previous-token head* in
layer 1 writes "my previous token was t" into each position, and an
*induction head* in layer 2 looks for the position whose previous token is
the current token.

Gradients come from :func:`lib.attention_backward` (chapter 9's backward
pass) plus the chain rule through the projections, the residual additions,
the embeddings and the cross-entropy. Everything is float64.

Reading a trained model: :func:`forward` can knock heads out or let a
projection read the embeddings instead of its layer's input (to see which
composition a head relies on); :func:`qk_circuit` and :func:`ov_circuit` are
Elhage et al.'s two circuits of a head; :func:`loss_floor` is the lowest loss
the task allows; :func:`continue_tokens` lets the model write, token by token.

Chapter 11's two checkpoints are made by this module's command line, with one
BLAS thread (so that sums are added in the same order every time)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python -m sdpa_course.lib.tiny_lm train --out chapters/tiny_lm.npz --force
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python -m sdpa_course.lib.tiny_lm train --n-layers 1 --out chapters/tiny_lm_one_layer.npz --force

``tests/test_tiny_lm.py`` runs both commands again and compares the results
with the committed files.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np

from ._checks import as_int
from .attention import scaled_dot_product_attention
from .backward import attention_backward

__all__ = [
    "Config",
    "Forward",
    "accuracy",
    "adam_step",
    "backward",
    "checkpoint",
    "continue_tokens",
    "copying_fraction",
    "cross_entropy",
    "forward",
    "init_params",
    "induction_score",
    "loss_by_part",
    "loss_floor",
    "make_batch",
    "ov_circuit",
    "position_scores",
    "previous_token_score",
    "qk_circuit",
    "train",
    "training_blocks",
]

Params = dict[str, np.ndarray]


@dataclass(frozen=True)
class Config:
    """Sizes, task and training settings of the tiny model (defaults: the chapter's run)."""

    vocab: int = 32
    half: int = 8
    min_half: int = 4
    d_model: int = 32
    n_heads: int = 2
    d_head: int = 16
    n_layers: int = 2
    batch: int = 64
    steps: int = 600
    lr: float = 1e-2
    seed: int = 0
    snapshot_every: int = 25
    pos_std: float = 0.1

    def __post_init__(self) -> None:
        for name in ("vocab", "half", "min_half", "d_model", "n_heads", "d_head", "n_layers", "batch"):
            as_int(getattr(self, name), name, minimum=1)
        as_int(self.steps, "steps", minimum=0)
        as_int(self.snapshot_every, "snapshot_every", minimum=1)
        for name in ("lr", "pos_std"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number; got {value!r}")
        if not self.min_half <= self.half <= self.vocab:
            raise ValueError(f"need min_half <= half <= vocab; got {self.min_half}, {self.half}, {self.vocab}")

    @property
    def n(self) -> int:
        """Sequence length: the block and its repeat."""
        return 2 * self.half


def make_batch(
    rng: np.random.Generator, batch: int, half: int, vocab: int, min_half: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` sequences of ``2 * half`` tokens and the length of each one's block.

    Sequence ``b`` is a block of ``lengths[b]`` distinct random tokens (drawn
    from ``0 .. vocab - 1``), then the same block again; the block's length
    is drawn uniformly from ``min_half .. half`` (default: always ``half``).
    Positions after the repeat are filled with random tokens and never scored.
    """
    low = half if min_half is None else min_half
    if not 1 <= low <= half <= vocab:
        raise ValueError(f"need 1 <= min_half <= half <= vocab; got min_half={low}, half={half}, vocab={vocab}")
    lengths = rng.integers(low, half + 1, size=batch)
    blocks = np.argsort(rng.random((batch, vocab)), axis=1)[:, :half]  # distinct tokens per row
    tokens = rng.integers(0, vocab, size=(batch, 2 * half))
    for b, length in enumerate(lengths):
        tokens[b, :length] = blocks[b, :length]
        tokens[b, length : 2 * length] = blocks[b, :length]
    return tokens, lengths


def init_params(cfg: Config, rng: np.random.Generator) -> Params:
    """Random starting weights: normal entries scaled by 1/sqrt(fan-in).

    Token embeddings start with standard deviation 1 and position embeddings
    with ``cfg.pos_std`` (0.1). In trial runs with a vocabulary of 16 and
    position embeddings of standard deviation 1, the model solved the task
    with another pair of heads (layer 1 matching each token to its earlier
    copy and carrying that copy's position, layer 2 reading the position one
    step on) instead of a previous-token head; starting positions small made
    the previous-token and induction heads appear.

    Keys: ``W_E`` (vocab, d), ``W_pos`` (n, d), ``W_U`` (d, vocab) and, per
    layer ``l`` (counted from 0), ``Q{l}``, ``K{l}``, ``V{l}`` (heads, d,
    d_head) and ``O{l}`` (heads, d_head, d).
    """
    d, h, e = cfg.d_model, cfg.n_heads, cfg.d_head
    p: Params = {
        "W_E": rng.normal(0.0, 1.0, (cfg.vocab, d)),
        "W_pos": rng.normal(0.0, cfg.pos_std, (cfg.n, d)),
    }
    for layer in range(cfg.n_layers):
        for name in "QKV":
            p[f"{name}{layer}"] = rng.normal(0.0, d**-0.5, (h, d, e))
        p[f"O{layer}"] = rng.normal(0.0, (h * e) ** -0.5, (h, e, d))
    p["W_U"] = rng.normal(0.0, d**-0.5, (d, cfg.vocab))
    return p


@dataclass
class Forward:
    """What the forward pass keeps for the backward pass and for reading the heads."""

    tokens: np.ndarray  # (b, n) int
    streams: list[np.ndarray] = field(default_factory=list)  # residual stream before each layer, and after the last
    qkv: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)  # (b, h, n, d_head) each
    mixed: list[np.ndarray] = field(default_factory=list)  # A V per layer, (b, h, n, d_head)
    weights: list[np.ndarray] = field(default_factory=list)  # attention weights per layer, (b, h, n, n)
    logits: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (b, n, vocab)
    changed: bool = False  # a head knocked out or a projection rerouted: not the model's gradient path


def _check_tokens(tokens: np.ndarray, params: Params) -> np.ndarray:
    t = np.asarray(tokens)
    vocab, n_max = params["W_E"].shape[0], params["W_pos"].shape[0]
    if t.ndim != 2 or not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"tokens must be a 2-d integer array (batch, n); got dtype {t.dtype}, shape {t.shape}")
    if t.shape[1] > n_max:
        raise ValueError(f"tokens has {t.shape[1]} positions but the model has only {n_max} position embeddings")
    if t.size and (t.min() < 0 or t.max() >= vocab):
        raise ValueError(f"tokens must lie in 0 .. {vocab - 1}; got values from {t.min()} to {t.max()}")
    return t


def n_layers_of(params: Params) -> int:
    """How many layers of heads ``params`` holds."""
    return sum(1 for key in params if key.startswith("Q"))


def _check_changes(
    params: Params, knock_out: Iterable[tuple[int, int]], from_embeddings: Iterable[tuple[int, str]]
) -> tuple[set[tuple[int, int]], set[tuple[int, str]]]:
    layers, heads = n_layers_of(params), params["Q0"].shape[0]
    out = {(int(layer), int(head)) for layer, head in knock_out}
    for layer, head in sorted(out):
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(
                f"knock_out names layer {layer} head {head}, but the model has layers 0 .. {layers - 1} "
                f"and heads 0 .. {heads - 1}"
            )
    rerouted = {(int(layer), str(name)) for layer, name in from_embeddings}
    for layer, name in sorted(rerouted):
        if not 0 <= layer < layers or name not in ("Q", "K", "V"):
            raise ValueError(
                f"from_embeddings names ({layer}, {name!r}); give (layer, 'Q', 'K' or 'V') "
                f"with layer in 0 .. {layers - 1}"
            )
    return out, rerouted


def forward(
    params: Params,
    tokens: np.ndarray,
    *,
    knock_out: Iterable[tuple[int, int]] = (),
    from_embeddings: Iterable[tuple[int, str]] = (),
) -> Forward:
    """Run the model on ``tokens`` (batch, n), keeping every activation.

    Two changes let a reader test what each head does (layers and heads
    counted from 0):

    - ``knock_out``: (layer, head) pairs whose output is not added to the
      stream (the head is zeroed, "knocked out");
    - ``from_embeddings``: (layer, "Q" | "K" | "V") pairs whose projection
      reads the embeddings ``W_E[t] + W_pos`` instead of the layer's input
      stream, so that it cannot use anything an earlier layer wrote.

    A pass with either change is for reading only: :func:`backward` refuses it.
    """
    t = _check_tokens(tokens, params)
    out, rerouted = _check_changes(params, knock_out, from_embeddings)
    n = t.shape[1]
    fw = Forward(tokens=t, changed=bool(out or rerouted))
    embedded = params["W_E"][t] + params["W_pos"][:n]
    x = embedded
    for layer in range(n_layers_of(params)):
        fw.streams.append(x)
        q, k, v = (
            (embedded if (layer, name) in rerouted else x)[:, None] @ params[f"{name}{layer}"] for name in "QKV"
        )  # (b, h, n, d_head)
        z, a = scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
        written = z @ params[f"O{layer}"]  # (b, h, n, d_model): what each head writes
        for layer_out, head in out:
            if layer_out == layer:
                written[:, head] = 0.0
        x = x + written.sum(axis=1)
        fw.qkv.append((q, k, v))
        fw.mixed.append(z)
        fw.weights.append(a)
    fw.streams.append(x)
    fw.logits = x @ params["W_U"]
    return fw


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return log_p


def cross_entropy(logits: np.ndarray, targets: np.ndarray, weight: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean next-token cross-entropy and its gradient with respect to the logits.

    ``L = sum_i w_i * (-log softmax(logits_i)[target_i]) / sum_i w_i`` over the
    positions ``i`` (``weight`` is 1 where a position is scored, 0 where not).
    Its gradient is ``w_i * (softmax(logits_i) - onehot(target_i)) / sum w``.
    """
    logp = _log_softmax(logits)
    total = float(weight.sum())
    if total <= 0:
        raise ValueError("weight must score at least one position (its sum is 0)")
    picked = np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    loss = float(-(weight * picked).sum() / total)
    grad = np.exp(logp)
    np.put_along_axis(grad, targets[..., None], np.take_along_axis(grad, targets[..., None], axis=-1) - 1.0, axis=-1)
    return loss, grad * (weight / total)[..., None]


def next_token_targets(tokens: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Targets (the token at i + 1) and weights (1 at positions 0 .. 2 L - 2 of a sequence with block length L)."""
    targets = np.zeros_like(tokens)
    targets[:, :-1] = tokens[:, 1:]
    weight = (np.arange(tokens.shape[1]) < 2 * np.asarray(lengths)[:, None] - 1).astype(float)
    return targets, weight


def _rows(a: np.ndarray) -> np.ndarray:
    """(b, n, c) -> (b * n, c): every position of every sequence as one row."""
    return a.reshape(-1, a.shape[-1])


def _head_rows(a: np.ndarray) -> np.ndarray:
    """(b, h, n, c) -> (h, b * n, c): per head, every position of every sequence as one row."""
    return a.transpose(1, 0, 2, 3).reshape(a.shape[1], -1, a.shape[-1])


def backward(params: Params, fw: Forward, grad_logits: np.ndarray) -> Params:
    """Gradients of the loss with respect to every parameter, from dL/dlogits.

    The chain rule, last operation first: the unembedding, then each layer's
    residual addition (the stream's gradient passes straight through, and
    also into the layer's attention), the output projection, attention
    itself (:func:`lib.attention_backward`), the three projections, and
    finally the two embeddings.
    """
    if fw.changed:
        raise ValueError("backward needs the model's own forward pass, without knocked-out or rerouted heads")
    grads: Params = {"W_U": _rows(fw.streams[-1]).T @ _rows(grad_logits)}
    dx = grad_logits @ params["W_U"].T
    for layer in reversed(range(len(fw.qkv))):
        x = fw.streams[layer]
        q, k, v = fw.qkv[layer]
        grads[f"O{layer}"] = _head_rows(fw.mixed[layer]).transpose(0, 2, 1) @ _rows(dx)  # Z_h^T dX
        dz = dx[:, None] @ params[f"O{layer}"].transpose(0, 2, 1)  # dX W_O,h^T, (b, h, n, d_head)
        dq, dk, dv = attention_backward(q, k, v, dz, is_causal=True)
        for name, d_proj in zip("QKV", (dq, dk, dv)):
            grads[f"{name}{layer}"] = _rows(x).T @ _head_rows(d_proj)  # X^T dQ_h, summed over sequences
            dx = dx + (d_proj @ params[f"{name}{layer}"].transpose(0, 2, 1)).sum(axis=1)
    grads["W_E"] = np.zeros_like(params["W_E"])
    np.add.at(grads["W_E"], fw.tokens, dx)
    grads["W_pos"] = np.zeros_like(params["W_pos"])
    grads["W_pos"][: dx.shape[1]] = dx.sum(axis=0)
    return grads


def loss_and_grads(params: Params, tokens: np.ndarray, lengths: np.ndarray) -> tuple[float, Params, Forward]:
    """Next-token cross-entropy (see :func:`next_token_targets`), its gradients, and the forward pass."""
    fw = forward(params, tokens)
    targets, weight = next_token_targets(fw.tokens, lengths)
    loss, grad_logits = cross_entropy(fw.logits, targets, weight)
    return loss, backward(params, fw, grad_logits), fw


def adam_step(
    params: Params,
    grads: Params,
    state: dict[str, Params],
    step: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
) -> None:
    """One Adam update of every parameter, in place (Kingma and Ba's defaults).

    ``state`` holds the running means ``m`` and ``u`` (created on the first
    call); ``step`` counts from 1.
    """
    b1, b2 = betas
    m = state.setdefault("m", {k: np.zeros_like(w) for k, w in params.items()})
    u = state.setdefault("u", {k: np.zeros_like(w) for k, w in params.items()})
    for key, g in grads.items():
        m[key] = b1 * m[key] + (1 - b1) * g
        u[key] = b2 * u[key] + (1 - b2) * g * g
        m_hat = m[key] / (1 - b1**step)
        u_hat = u[key] / (1 - b2**step)
        params[key] -= lr * m_hat / (np.sqrt(u_hat) + eps)


def _repeat_positions(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sequence, position) of every query i in L .. 2 L - 2: a repeated token whose successor is known."""
    pairs = [(b, i) for b, length in enumerate(np.asarray(lengths)) for i in range(length, 2 * length - 1)]
    seq, pos = np.array(pairs).T
    return seq, pos


def accuracy(
    params: Params,
    tokens: np.ndarray,
    lengths: np.ndarray,
    *,
    knock_out: Iterable[tuple[int, int]] = (),
    from_embeddings: Iterable[tuple[int, str]] = (),
) -> float:
    """Next-token accuracy on the repeated half: the predictions at positions L .. 2 L - 2.

    At position ``i`` of the repeat the model must predict token ``i + 1``,
    a repeat of token ``i + 1 - L``. (Position ``L - 1`` predicts the block's
    first token again, which nothing in the block gives away; it is not counted.)
    ``knock_out`` and ``from_embeddings`` change the forward pass as in :func:`forward`.
    """
    fw = forward(params, tokens, knock_out=knock_out, from_embeddings=from_embeddings)
    seq, pos = _repeat_positions(lengths)
    return float((fw.logits[seq, pos].argmax(axis=-1) == fw.tokens[seq, pos + 1]).mean())


def induction_score(weights: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per head: the mean weight from a repeated token (query i in L .. 2 L - 2) to key i - L + 1.

    Key ``i - L + 1`` holds the token that followed the first occurrence of
    token ``i``. ``weights`` has shape (batch, heads, n, n); the result (heads,).
    """
    seq, pos = _repeat_positions(lengths)
    score: np.ndarray = weights[seq, :, pos, pos - np.asarray(lengths)[seq] + 1].mean(axis=0)
    return score


PARTS = ("all", "first", "repeat")


def _queries(length: int, part: str) -> tuple[int, int]:
    """The queries i (start, stop) of a sequence with block length ``length`` that have a key i - 1."""
    return {"all": (1, 2 * length), "first": (1, length), "repeat": (length, 2 * length)}[part]


def previous_token_score(weights: np.ndarray, lengths: np.ndarray, part: str = "all") -> np.ndarray:
    """Per head: the mean weight from each query i to key i - 1 (result shape (heads,)).

    ``part`` chooses the queries: ``"all"`` (i in 1 .. 2 L - 1), ``"first"``
    (the first block, i in 1 .. L - 1) or ``"repeat"`` (i in L .. 2 L - 1).
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}; got {part!r}")
    pairs = [(b, i) for b, length in enumerate(np.asarray(lengths).tolist()) for i in range(*_queries(length, part))]
    seq, pos = np.array(pairs).T
    score: np.ndarray = weights[seq, :, pos, pos - 1].mean(axis=0)
    return score


def _head(params: Params, layer: int, head: int) -> tuple[int, int]:
    layers, heads = n_layers_of(params), params["Q0"].shape[0]
    if not (0 <= layer < layers and 0 <= head < heads):
        raise ValueError(
            f"no layer {layer} head {head}: the model has layers 0 .. {layers - 1}, heads 0 .. {heads - 1}"
        )
    return layer, head


def qk_circuit(params: Params, layer: int, head: int) -> np.ndarray:
    """The head's QK circuit ``W_QK = W_Q W_K^T`` (d_model, d_model).

    A query stream row ``x`` and a key stream row ``y`` get the score
    ``x W_QK y^T / sqrt(d_head)``: which key a head looks for is this one
    matrix (chapter 3's product of the two projections; Elhage et al.'s QK
    circuit).
    """
    layer, head = _head(params, layer, head)
    w_qk: np.ndarray = params[f"Q{layer}"][head] @ params[f"K{layer}"][head].T
    return w_qk


def position_scores(params: Params, layer: int, head: int) -> np.ndarray:
    """The part of a head's scores that comes from the position embeddings alone, (n, n).

    Entry ``(i, j)`` is ``W_pos[i] W_QK W_pos[j]^T / sqrt(d_head)`` for the keys
    ``j <= i`` a causal head may read, and ``-inf`` above the diagonal. For a
    layer-1 head this is the score between positions ``i`` and ``j`` before
    any token is taken into account.
    """
    w_qk = qk_circuit(params, layer, head)
    pos = params["W_pos"]
    scores: np.ndarray = pos @ w_qk @ pos.T / math.sqrt(params["Q0"].shape[-1])
    return np.where(np.tri(pos.shape[0], dtype=bool), scores, -np.inf)


def ov_circuit(params: Params, layer: int, head: int) -> np.ndarray:
    """The head's full OV circuit read from token to logit: ``W_E W_V W_O W_U`` (vocab, vocab).

    Entry ``(s, t)`` is how much the head raises the logit of token ``t``
    when it attends (with weight 1) to the embedding of token ``s``: what the
    head writes about a token it reads (Elhage et al.'s OV circuit, with the
    embedding before it and the unembedding after it).
    """
    layer, head = _head(params, layer, head)
    full: np.ndarray = params["W_E"] @ params[f"V{layer}"][head] @ params[f"O{layer}"][head] @ params["W_U"]
    return full


def copying_fraction(circuit: np.ndarray) -> float:
    """The share of rows of a square token-to-token matrix whose largest entry is on the diagonal.

    For :func:`ov_circuit` it is the share of tokens ``s`` that the head, when it
    reads ``s``, pushes the model to predict as ``s`` itself more than any other
    token: 1 for a head that copies every token.
    """
    m = np.asarray(circuit)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"circuit must be a square matrix (vocab, vocab); got shape {m.shape}")
    return float((m.argmax(axis=1) == np.arange(m.shape[0])).mean())


def loss_floor(cfg: Config) -> float:
    """The lowest mean loss (in nats) that any model can expect on the task of ``cfg``.

    In the repeat the next token is certain: loss 0. At position ``i`` of the
    first block, ``i + 1`` distinct tokens have been seen and the block length
    ``L`` (uniform on ``min_half .. half``) is at least ``i + 1``. It is exactly
    ``i + 1``, so that the next token is the block's first one, with
    probability ``r_i = 1 / (half - i)`` once ``i + 1 >= min_half`` (else 0);
    otherwise the next token is one of the ``vocab - i - 1`` unused tokens,
    each equally likely. The best prediction gives exactly these
    probabilities, and its expected loss at position ``i`` is their entropy
    ``H_i``. Position ``i`` is scored when ``L >= i + 1``; the loss averages
    over the ``2 L - 1`` scored positions of each sequence, so over many
    sequences it approaches ``sum_i P(L >= i + 1) H_i / E[2 L - 1]``.
    """
    lengths = np.arange(cfg.min_half, cfg.half + 1)
    expected = 0.0
    for i in range(cfg.half):
        still = float((lengths >= i + 1).mean())  # P(L >= i + 1): position i is scored
        r = 1.0 / (cfg.half - i) if i + 1 >= cfg.min_half else 0.0
        unused = cfg.vocab - i - 1
        entropy = -r * math.log(r) if r > 0 else 0.0
        if r < 1:
            entropy -= (1 - r) * math.log((1 - r) / unused)
        expected += still * entropy
    return expected / float((2 * lengths - 1).mean())


def loss_by_part(params: Params, tokens: np.ndarray, lengths: np.ndarray) -> dict[str, float]:
    """The mean next-token loss on ``tokens`` and the share of it that each half contributes.

    ``"all"`` is the loss that training measures (the mean over positions
    0 .. 2 L - 2 of every sequence); ``"first"`` and ``"repeat"`` split that
    same sum between the first block (positions 0 .. L - 1, whose next token
    is the block's next token, or its first one again at L - 1) and the repeat
    (positions L .. 2 L - 2), each divided by the same number of scored
    positions, so that the two add up to ``"all"``.
    """
    fw = forward(params, tokens)
    targets, weight = next_token_targets(fw.tokens, lengths)
    logp = _log_softmax(fw.logits)
    lost = -np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0] * weight
    first = np.arange(fw.tokens.shape[1]) < np.asarray(lengths)[:, None]
    total = float(weight.sum())
    return {
        "all": float(lost.sum() / total),
        "first": float(lost[first].sum() / total),
        "repeat": float(lost[~first].sum() / total),
    }


def continue_tokens(
    params: Params, prompt: Sequence[int] | np.ndarray, n_new: int, rng: np.random.Generator | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Let the model write ``n_new`` tokens after ``prompt``, one at a time.

    Each step runs the model on the whole sequence so far and reads the
    logits at its last position: with ``rng`` it draws the next token from
    their softmax, without it it takes the most likely token. The token is
    appended and the next step starts. Returns the new tokens and the
    probability the model gave each one when it was chosen.
    """
    seq = [int(t) for t in np.asarray(prompt).reshape(-1)]
    n_new = as_int(n_new, "n_new", minimum=0)
    room = params["W_pos"].shape[0]
    if not seq or len(seq) + n_new > room:
        raise ValueError(
            f"prompt ({len(seq)} tokens) plus n_new ({n_new}) must be 1 to {room} tokens, "
            "the positions the model has embeddings for"
        )
    new, probs = [], []
    for _ in range(n_new):
        logits = forward(params, np.array([seq]))
        p = np.exp(_log_softmax(logits.logits[0, -1]))
        token = int(p.argmax()) if rng is None else int(rng.choice(p.size, p=p))
        new.append(token)
        probs.append(float(p[token]))
        seq.append(token)
    return np.array(new, dtype=int), np.array(probs)


def _start(cfg: Config) -> tuple[Params, np.random.Generator]:
    """The starting weights of :func:`train`, and its generator ready to draw the first batch."""
    rng = np.random.default_rng(cfg.seed)
    return init_params(cfg, rng), rng


def training_blocks(cfg: Config) -> list[tuple[int, ...]]:
    """The block of every sequence that :func:`train` draws for ``cfg``, in order (``steps + 1`` batches)."""
    _, rng = _start(cfg)
    blocks = []
    for _ in range(cfg.steps + 1):
        tokens, lengths = make_batch(rng, cfg.batch, cfg.half, cfg.vocab, cfg.min_half)
        blocks += [tuple(seq[:length].tolist()) for seq, length in zip(tokens, lengths)]
    return blocks


@dataclass
class TrainResult:
    """A trained model and its history."""

    params: Params
    losses: np.ndarray  # training loss at each step (before the step's update)
    snapshot_steps: np.ndarray  # the steps at which the weights were snapshot
    snapshots: list[list[np.ndarray]]  # per snapshot, per layer: weights on the probe sequence (heads, n, n)
    probe: np.ndarray  # one held-out sequence (n,) the snapshots are taken on
    previous_scores: np.ndarray  # per snapshot, layer, head: previous_token_score on the watch batch
    induction_scores: np.ndarray  # per snapshot, layer, head: induction_score on the watch batch
    seconds: float


def train(cfg: Config, *, progress: bool = False) -> TrainResult:
    """Train the model with Adam on fresh random batches; deterministic for a given ``cfg.seed``.

    Each step draws a new batch (:func:`training_blocks` lists them), so a
    sequence is almost never seen twice. Every
    ``cfg.snapshot_every`` steps (and at the end) it keeps the attention
    weights on one fixed probe sequence (a full-length block, drawn from a
    separate generator) and every head's previous-token and induction scores
    on a fixed *watch* batch of 200 sequences (another generator).
    """
    params, rng = _start(cfg)
    probe, _ = make_batch(np.random.default_rng([cfg.seed, 1]), 1, cfg.half, cfg.vocab)
    watch = make_batch(np.random.default_rng([cfg.seed, 3]), 200, cfg.half, cfg.vocab, cfg.min_half)
    state: dict[str, Params] = {}
    losses = np.zeros(cfg.steps + 1)
    steps: list[int] = []
    snaps: list[list[np.ndarray]] = []
    prev: list[list[np.ndarray]] = []
    ind: list[list[np.ndarray]] = []
    start = time.perf_counter()
    for t in range(cfg.steps + 1):
        if t % cfg.snapshot_every == 0 or t == cfg.steps:
            steps.append(t)
            snaps.append([a[0] for a in forward(params, probe).weights])
            watched = forward(params, watch[0]).weights
            prev.append([previous_token_score(a, watch[1]) for a in watched])
            ind.append([induction_score(a, watch[1]) for a in watched])
        tokens, lengths = make_batch(rng, cfg.batch, cfg.half, cfg.vocab, cfg.min_half)
        loss, grads, _ = loss_and_grads(params, tokens, lengths)
        losses[t] = loss
        if t == cfg.steps:
            break
        adam_step(params, grads, state, t + 1, cfg.lr)
        if progress and t % 100 == 0:
            print(f"step {t:5d}  loss {loss:.4f}", flush=True)
    seconds = time.perf_counter() - start
    return TrainResult(params, losses, np.array(steps), snaps, probe[0], np.array(prev), np.array(ind), seconds)


def save(result: TrainResult, cfg: Config, path: Path) -> None:
    """Write a trained model, its history and its config to one ``.npz`` file."""
    arrays: dict[str, np.ndarray] = {f"param_{k}": v for k, v in result.params.items()}
    arrays["losses"] = result.losses
    arrays["snapshot_steps"] = result.snapshot_steps
    arrays["snapshots"] = np.array([np.stack(layers) for layers in result.snapshots])  # (snap, layer, h, n, n)
    arrays["probe"] = result.probe
    arrays["previous_scores"] = result.previous_scores
    arrays["induction_scores"] = result.induction_scores
    arrays["seconds"] = np.array(result.seconds)
    arrays["config"] = np.array([f"{k}={v}" for k, v in asdict(cfg).items()])
    # numpy's stubs type **kwds as if they could fill allow_pickle; every value here is an array.
    np.savez_compressed(path, **arrays)  # type: ignore[arg-type]


#: The file name of chapter 11's two-layer checkpoint (see :func:`checkpoint`).
CHECKPOINT = "tiny_lm.npz"


def checkpoint() -> Path:
    """Where chapter 11's committed two-layer model is, wherever ``lib`` is installed.

    In the repository it sits beside the chapter that trains it
    (``chapters/tiny_lm.npz``); the course wheel (the learner kit, and the
    in-browser Jupyter) carries the same file beside this module, so that
    homework 11 and its checks can read it without the book's folders.
    """
    here = Path(__file__).resolve().parent
    chapters = here.parent.parent / "chapters"  # the repository's, beside sdpa_course/
    for path in (here / CHECKPOINT, chapters / CHECKPOINT):
        if path.is_file():
            return path
    raise FileNotFoundError(f"chapter 11's model {CHECKPOINT} is neither beside {here} nor in {chapters}")


def load(path: Path) -> tuple[Config, TrainResult]:
    """Read what :func:`save` wrote."""
    with np.load(path) as data:
        fields = {f.split("=", 1)[0]: f.split("=", 1)[1] for f in data["config"].tolist()}
        types = {k: type(v) for k, v in asdict(Config()).items()}
        cfg = Config(**{k: types[k](v) for k, v in fields.items()})
        params = {k.removeprefix("param_"): data[k] for k in data.files if k.startswith("param_")}
        snaps = [list(layers) for layers in data["snapshots"]]
        result = TrainResult(
            params,
            data["losses"],
            data["snapshot_steps"],
            snaps,
            data["probe"],
            data["previous_scores"],
            data["induction_scores"],
            float(data["seconds"]),
        )
    return cfg, result


#: The settings of :class:`Config` that the command line can change: all of them.
CLI_SETTINGS = tuple(f.name for f in fields(Config))


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m sdpa_course.lib.tiny_lm train --out FILE [--steps N] [--seed S] ...``."""
    parser = argparse.ArgumentParser(prog="python -m sdpa_course.lib.tiny_lm", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train the tiny model and write it to an .npz file")
    tr.add_argument("--out", type=Path, required=True, help="the .npz file to write (refuses to overwrite)")
    tr.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    defaults = Config()
    for name in CLI_SETTINGS:
        default = getattr(defaults, name)
        tr.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    args = parser.parse_args(argv)
    if args.out.exists() and not args.force:
        parser.error(f"{args.out} exists; pass --force to overwrite it")
    cfg = Config(**{name: getattr(args, name) for name in CLI_SETTINGS})
    result = train(cfg, progress=True)
    save(result, cfg, args.out)
    held_out = make_batch(np.random.default_rng([cfg.seed, 2]), 1000, cfg.half, cfg.vocab, cfg.min_half)
    score = accuracy(result.params, *held_out)
    print(f"trained in {result.seconds:.1f} s; held-out accuracy on the repeated half {score:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
