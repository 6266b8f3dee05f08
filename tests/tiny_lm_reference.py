"""An independent forward pass of chapter 11's tiny model, for the tests (never ``lib``'s code).

``loop_logits`` runs one sequence with ``tests/naive.py``'s plain-Python
attention; ``array_forward`` runs a whole batch with numpy, written from the
model's definition (its own softmax, its own causal mask), fast enough for a
thousand held-out sequences, with heads knocked out or projections reading the
embeddings on request. ``test_tiny_lm`` checks the two against each other and
against ``lib.tiny_lm``. ``bayes_loss`` is the loss of the best possible
predictor on a batch, from Bayes' rule and the task's definition alone.
"""

from __future__ import annotations

import math

import numpy as np
from naive import naive_attention
from naive import softmax as naive_softmax


def loop_logits(params: dict[str, np.ndarray], tokens: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One sequence through the model with loops: its logits and each layer's weights (heads, n, n)."""
    n = len(tokens)
    x = [params["W_E"][t] + params["W_pos"][i] for i, t in enumerate(tokens)]
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


def array_forward(
    params: dict[str, np.ndarray],
    tokens: np.ndarray,
    knock_out: frozenset[tuple[int, int]] = frozenset(),
    from_embeddings: frozenset[tuple[int, str]] = frozenset(),
) -> tuple[np.ndarray, list[np.ndarray]]:
    """A batch (b, n) through the model: logits (b, n, vocab) and each layer's weights (b, heads, n, n).

    ``knock_out`` holds (layer, head) pairs whose output is left out of the
    stream; ``from_embeddings`` (layer, "Q" | "K" | "V") pairs whose
    projection reads the embeddings instead of the layer's input.
    """
    n = tokens.shape[1]
    embedded = params["W_E"][tokens] + params["W_pos"][:n]
    x = embedded
    future = np.triu(np.ones((n, n), dtype=bool), k=1)
    weights = []
    layer = 0
    while f"Q{layer}" in params:
        q, k, v = (
            np.einsum("bnd,hde->bhne", embedded if (layer, m) in from_embeddings else x, params[f"{m}{layer}"])
            for m in "QKV"
        )
        s = np.einsum("bhie,bhje->bhij", q, k) / math.sqrt(q.shape[-1])
        s[..., future] = -np.inf
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        a = e / e.sum(axis=-1, keepdims=True)
        keep = np.array([(layer, g) not in knock_out for g in range(a.shape[1])], dtype=float)
        # optimize: contracted pairwise; as one loop over all six indices it takes 15 times longer
        x = x + np.einsum("bhij,bhje,hed,h->bid", a, v, params[f"O{layer}"], keep, optimize=True)
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


def repeat_accuracy(
    params: dict[str, np.ndarray],
    tokens: np.ndarray,
    lengths: np.ndarray,
    knock_out: frozenset[tuple[int, int]] = frozenset(),
    from_embeddings: frozenset[tuple[int, str]] = frozenset(),
) -> float:
    """How often the most likely next token is right at positions L .. 2 L - 2 (changes as in ``array_forward``)."""
    logits, _ = array_forward(params, tokens, knock_out, from_embeddings)
    right = [
        logits[b, i].argmax() == tokens[b, i + 1]
        for b, length in enumerate(lengths.tolist())
        for i in range(length, 2 * length - 1)
    ]
    return float(np.mean(right))


def bayes_loss(tokens: np.ndarray, lengths: np.ndarray, vocab: int, min_half: int, half: int) -> float:
    """The loss of the best possible predictor on this batch, found by Bayes' rule from the task's definition.

    For every scored position i (0 .. 2 L - 2 of each sequence) the predictor
    weighs each block length L' in min_half .. half (equally likely a priori)
    by the probability of the tokens seen so far, 0 .. i, under L': a block of
    L' distinct tokens (token k one of the vocab - k unused ones), then its
    repeat (certain), then filler (any token). It predicts token i + 1 as the
    mixture over L'. The result is the mean of -log p(true next token) over
    all scored positions, as the training loss is.
    """

    def p_token(seq: list[int], k: int, length: int) -> float:
        """P(token k | tokens 0 .. k - 1, block length ``length``)."""
        if k < length:
            return 0.0 if seq[k] in seq[:k] else 1.0 / (vocab - k)
        if k < 2 * length:
            return 1.0 if seq[k] == seq[k - length] else 0.0
        return 1.0 / vocab

    total, count = 0.0, 0
    for seq, true_length in zip(tokens.tolist(), lengths.tolist()):
        for i in range(2 * true_length - 1):
            seen = next_p = 0.0
            for length in range(min_half, half + 1):
                prefix = math.prod(p_token(seq, k, length) for k in range(i + 1))
                seen += prefix
                next_p += prefix * p_token(seq, i + 1, length)
            total -= math.log(next_p / seen)
            count += 1
    return total / count


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
