"""An independent forward pass of chapter 11's tiny model, for the tests (never ``lib``'s code).

``loop_logits`` runs one sequence with ``tests/naive.py``'s plain-Python
attention; ``array_forward`` runs a whole batch with numpy, written from the
model's definition (its own softmax, its own causal mask), fast enough for a
thousand held-out sequences. ``test_tiny_lm`` checks the two against each other
and against ``lib.tiny_lm``.
"""

from __future__ import annotations

import math

import numpy as np
from naive import naive_attention
from naive import softmax as naive_softmax


def loop_logits(params: dict[str, np.ndarray], tokens: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One sequence through the model with loops: its logits and each layer's weights (heads, n, n)."""
    n = len(tokens)
    x = [params["E"][t] + params["P"][i] for i, t in enumerate(tokens)]
    causal = [[j <= i for j in range(n)] for i in range(n)]
    weights = []
    layer = 0
    while f"Q{layer}" in params:
        added = [np.zeros_like(row) for row in x]
        per_head = []
        for h in range(params[f"Q{layer}"].shape[0]):
            q, k, v = ([(row @ params[f"{m}{layer}"][h]).tolist() for row in x] for m in "QKV")
            out, a = naive_attention(q, k, v, causal)
            per_head.append(a)
            for i in range(n):
                added[i] = added[i] + np.array(out[i]) @ params[f"O{layer}"][h]
        x = [row + extra for row, extra in zip(x, added)]
        weights.append(np.array(per_head))
        layer += 1
    return np.array([row @ params["W_U"] for row in x]), weights


def loop_loss(params: dict[str, np.ndarray], tokens: np.ndarray, lengths: np.ndarray) -> float:
    """Mean of -log p(next token) over positions 0 .. 2 L - 2 of each sequence, with loops."""
    total, count = 0.0, 0
    for seq, length in zip(tokens.tolist(), lengths.tolist()):
        logits, _ = loop_logits(params, seq)
        for i in range(2 * length - 1):
            total -= math.log(naive_softmax(logits[i].tolist())[seq[i + 1]])
            count += 1
    return total / count


def array_forward(params: dict[str, np.ndarray], tokens: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """A batch (b, n) through the model: logits (b, n, vocab) and each layer's weights (b, heads, n, n)."""
    n = tokens.shape[1]
    x = params["E"][tokens] + params["P"][:n]
    future = np.triu(np.ones((n, n), dtype=bool), k=1)
    weights = []
    layer = 0
    while f"Q{layer}" in params:
        q, k, v = (np.einsum("bnd,hde->bhne", x, params[f"{m}{layer}"]) for m in "QKV")
        s = np.einsum("bhie,bhje->bhij", q, k) / math.sqrt(q.shape[-1])
        s[..., future] = -np.inf
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        x = x + np.einsum("bhij,bhje,hed->bid", a, v, params[f"O{layer}"])
        weights.append(a)
        layer += 1
    return x @ params["W_U"], weights


def array_loss(params: dict[str, np.ndarray], tokens: np.ndarray, lengths: np.ndarray) -> float:
    """The same loss as ``loop_loss``, from ``array_forward``."""
    logits, _ = array_forward(params, tokens)
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    terms = [-logp[b, i, tokens[b, i + 1]] for b, length in enumerate(lengths) for i in range(2 * length - 1)]
    return float(np.mean(terms))


def scores(
    params: dict[str, np.ndarray], tokens: np.ndarray, lengths: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """Accuracy on the repeat, per-head previous-token scores (layers, heads), induction scores (layers, heads).

    Accuracy counts the predictions at positions L .. 2 L - 2; the previous-token
    score averages the weight from query i to key i - 1 over i = 1 .. 2 L - 1;
    the induction score the weight from query i to key i - L + 1 over
    i = L .. 2 L - 2.
    """
    logits, weights = array_forward(params, tokens)
    right, prev, ind = [], [], []
    for b, length in enumerate(lengths.tolist()):
        for i in range(length, 2 * length - 1):
            right.append(logits[b, i].argmax() == tokens[b, i + 1])
            ind.append([a[b, :, i, i - length + 1] for a in weights])
        prev.extend([a[b, :, i, i - 1] for a in weights] for i in range(1, 2 * length))
    return float(np.mean(right)), np.mean(prev, axis=0), np.mean(ind, axis=0)
