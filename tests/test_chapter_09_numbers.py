"""Chapter 9's built page prints numbers that an independent computation reproduces.

The permutation facts are recomputed with the plain-Python attention of
``tests/naive.py``; the finite-difference errors with this module's own
central differences and its own backward pass (an explicit Jacobian matrix per
row, never ``lib.backward``); the training numbers by training the same head
again here with that backward pass, its own forward pass (``naive``'s recipe in
numpy), its own sinusoid, its own cross-entropy (``math.log`` of a plain-Python
softmax) and its own Adam, from the chapter's stated recipe (seeds 0 and 1, 64
sequences of 8 tokens over 5 kinds, d_k = 8, 300 steps, learning rate 0.05);
the held-out accuracy by running the trained head on 1000 fresh sequences
(seed 3) one position at a time.
"""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from built_book import ROOT, built_page
from chapter_pages import printed_flag
from naive import naive_attention
from naive import softmax as naive_softmax

from sdpa_course import lib

PAGE = "chapters/09_a_head_that_learns.html"
VOCAB, N, BATCH, D_POS, D_K, STEPS, LR = 5, 8, 64, 8, 8, 300, 0.05


class _Outputs(HTMLParser):
    """The text inside the page's cell outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.stack: list[bool] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in {"img", "br", "meta", "link", "input", "hr"}:
            return
        inside = "cell_output" in (dict(attrs).get("class") or "")
        self.stack.append(inside)
        self.depth += inside

    def handle_endtag(self, tag):
        if self.stack and tag not in {"img", "br", "meta", "link", "input", "hr"}:
            self.depth -= self.stack.pop()

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


@pytest.fixture(scope="module")
def printed() -> str:
    parser = _Outputs()
    parser.feed(built_page(PAGE))
    return "".join(parser.text)


def number(printed: str, pattern: str) -> float:
    match = re.search(pattern, printed)
    assert match, f"chapter 9 does not print {pattern!r}"
    return float(match.group(1))


# ---------------------------------------------------------------- positions


def _sinusoid(n: int, d: int) -> np.ndarray:
    return np.array(
        [
            [math.sin(i / 10000 ** (c / d)) if c % 2 == 0 else math.cos(i / 10000 ** ((c - 1) / d)) for c in range(d)]
            for i in range(n)
        ]
    )


def _naive_head(x: np.ndarray) -> np.ndarray:
    w = lib.example_projections()
    q, k, v = (x @ w[name] for name in ("w_q", "w_k", "w_v"))
    return np.array(naive_attention(q.tolist(), k.tolist(), v.tolist())[0])


def test_permutation_facts_are_printed_as_an_independent_attention_finds_them(printed):
    tokens, x = lib.example_sentence()
    perm = [5, 2, 0, 4, 1, 3]
    out = _naive_head(x)
    shuffles = np.allclose(_naive_head(x[perm]), out[perm], rtol=0, atol=1e-12)
    pos = _sinusoid(len(tokens), x.shape[1])
    out_pos = _naive_head(x + pos)
    shuffles_with_positions = np.allclose(_naive_head(x[perm] + pos), out_pos[perm], rtol=0, atol=1e-12)
    assert (shuffles, shuffles_with_positions) == (True, False)
    assert printed_flag(printed, "head(shuffled x) equals") is shuffles
    assert printed_flag(printed, "o_0 equals o_4") is bool(np.array_equal(out[0], out[4])) is True
    assert printed_flag(printed, "with positions, o_0 equals") is bool(np.allclose(out_pos[0], out_pos[4])) is False
    assert printed_flag(printed, "with positions, shuffling") is shuffles_with_positions


# ---------------------------------------------------------------- an independent backward pass


def _softmax(s: np.ndarray) -> np.ndarray:
    top = np.where(np.isneginf(s.max(-1, keepdims=True)), 0.0, s.max(-1, keepdims=True))
    e = np.exp(s - top)
    return e / e.sum(-1, keepdims=True)


def _forward(q, k, v):
    s = np.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.shape[-1])
    s = np.where(np.tri(q.shape[-2], k.shape[-2], dtype=bool), s, -np.inf)
    a = _softmax(s)
    return np.einsum("...ij,...jc->...ic", a, v), a


def _backward(q, k, v, g):
    """dq, dk, dv with the softmax's Jacobian built as a matrix per row: diag(a) - a a^T."""
    _, a = _forward(q, k, v)
    dv = np.einsum("...ij,...ic->...jc", a, g)
    da = np.einsum("...ic,...jc->...ij", g, v)
    jac = np.einsum("...ij,jl->...ijl", a, np.eye(a.shape[-1])) - np.einsum("...ij,...il->...ijl", a, a)
    ds = np.einsum("...ijl,...ij->...il", jac, da) / math.sqrt(q.shape[-1])
    return np.einsum("...ij,...jd->...id", ds, k), np.einsum("...ij,...id->...jd", ds, q), dv


def test_finite_difference_errors_are_small_and_reproduced(printed):
    tokens, x = lib.example_sentence()
    w = lib.example_projections()
    x_pos = x + _sinusoid(len(tokens), x.shape[1])
    args = [x_pos @ w[name] for name in ("w_q", "w_k", "w_v")]
    g = np.random.default_rng(2).standard_normal((len(tokens), args[2].shape[1]))
    analytic = _backward(*args, g)
    h = 1e-6
    for which, name in enumerate(["dQ", "dK", "dV"]):
        numeric = np.zeros_like(args[which])
        for idx in np.ndindex(numeric.shape):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[which][idx] += h
            minus[which][idx] -= h
            numeric[idx] = (np.sum(g * _forward(*plus)[0]) - np.sum(g * _forward(*minus)[0])) / (2 * h)
        mine = np.abs(analytic[which] - numeric).max() / np.abs(numeric).max()
        shown = number(printed, rf"{name}: relative error ([0-9.e+-]+)")
        assert mine < 1e-7 and 0 < shown < 1e-7, (name, mine, shown)


# ---------------------------------------------------------------- training, again


def _data():
    rng = np.random.default_rng(0)
    seqs = rng.integers(0, VOCAB, size=(BATCH, N))
    one_hot = np.eye(VOCAB)[seqs]
    targets = np.zeros_like(one_hot)
    targets[:, 1:] = one_hot[:, :-1]
    pos = np.broadcast_to(_sinusoid(N, D_POS), (BATCH, N, D_POS))
    return np.concatenate([one_hot, pos], axis=-1), one_hot, targets


def _cross_entropy(out: np.ndarray, targets: np.ndarray) -> float:
    """Mean of -log softmax(o_i)[y_i] over the scored positions (1 .. N-1), with plain Python."""
    terms = []
    for b in range(out.shape[0]):
        for i in range(1, N):
            probs = naive_softmax(out[b, i].tolist())
            terms.append(-math.log(probs[int(np.argmax(targets[b, i]))]))
    return sum(terms) / len(terms)


def _train(x: np.ndarray, targets: np.ndarray) -> tuple[list[float], dict[int, float], list[np.ndarray]]:
    d = x.shape[-1]
    init = np.random.default_rng(1)
    weights = [init.normal(scale=d**-0.5, size=(d, width)) for width in (D_K, D_K, VOCAB)]
    first = [np.zeros_like(m) for m in weights]
    second = [np.zeros_like(m) for m in weights]
    scored = np.zeros((BATCH, N, 1))
    scored[:, 1:] = 1
    count = BATCH * (N - 1)
    losses, mass = [], {}
    for t in range(STEPS + 1):
        proj = [x @ m for m in weights]
        out, a = _forward(*proj)
        losses.append(_cross_entropy(out, targets))
        mass[t] = float(np.mean([a[:, i, i - 1] for i in range(1, N)]))
        if t == STEPS:
            break
        # d(-log p_y)/do = p - onehot(y): the softmax's Jacobian applied to -1/p_y at y.
        grads = _backward(*proj, (_softmax(out) - targets) * scored / count)
        for m, (weight, grad) in enumerate(zip(weights, grads)):
            full = np.einsum("bnr,bnc->rc", x, grad)
            first[m] = 0.9 * first[m] + 0.1 * full
            second[m] = 0.999 * second[m] + 0.001 * full**2
            step = (first[m] / (1 - 0.9 ** (t + 1))) / (np.sqrt(second[m] / (1 - 0.999 ** (t + 1))) + 1e-8)
            weight -= LR * step
    return losses, mass, weights


@pytest.fixture(scope="module")
def trained():
    x_with, x_without, targets = _data()
    return {"with": _train(x_with, targets), "without": _train(x_without, targets)}


def close(shown: float, mine: float, decimals: int) -> bool:
    return abs(shown - mine) <= 0.5 * 10**-decimals + 1e-9


def test_training_with_positions_learns_the_previous_token(printed, trained):
    losses, mass, _ = trained["with"]
    start = number(printed, r"with positions: loss ([0-9.]+) at the start")
    end = number(printed, r"with positions: loss [0-9.]+ at the start, ([0-9.e+-]+) after 300 steps")
    assert close(start, losses[0], 4)
    assert abs(end - losses[-1]) <= 0.01 * losses[-1]
    assert losses[-1] < 1e-2 * losses[0]  # the head learns the job
    assert close(start, math.log(VOCAB), 0) and losses[0] > 0.9 * math.log(VOCAB)  # a near-uniform guess at first
    for t in (0, 30, 300):
        shown = number(printed, rf"step +{t}: mean weight on the previous token ([0-9.]+)")
        assert close(shown, mass[t], 3), (t, shown, mass[t])
    assert mass[300] > 0.95


def test_training_without_positions_stalls(printed, trained):
    losses, mass, _ = trained["without"]
    start = number(printed, r"without positions: loss ([0-9.]+) at the start")
    end = number(printed, r"without positions: loss [0-9.]+ at the start, ([0-9.]+) after 300 steps")
    assert close(start, losses[0], 4) and close(end, losses[-1], 4)
    assert close(number(printed, r"after training: ([0-9.]+)"), mass[300], 3)
    assert losses[-1] > 100 * trained["with"][0][-1] and mass[300] < 0.5


def test_the_chapter_asks_before_it_shows():
    text = (ROOT / "chapters" / "09_a_head_that_learns.md").read_text(encoding="utf-8")
    assert text.count(":class: predict") >= 2
    assert text.count(":class: optional") >= 1


def _held_out_accuracy(weights: list[np.ndarray], with_positions: bool) -> float:
    """Fresh sequences (seed 3), one query at a time with naive attention: argmax o_i == token i-1?"""
    seqs = np.random.default_rng(3).integers(0, VOCAB, size=(1000, N))
    pos = _sinusoid(N, D_POS)
    right = 0
    for seq in seqs:
        x = np.eye(VOCAB)[seq]
        if with_positions:
            x = np.concatenate([x, pos], axis=-1)
        q, k, v = ((x @ m).tolist() for m in weights)
        out, _ = naive_attention(q, k, v, [[j <= i for j in range(N)] for i in range(N)])
        right += sum(int(np.argmax(out[i]) == seq[i - 1]) for i in range(1, N))
    return right / (1000 * (N - 1))


def test_held_out_accuracy_on_fresh_sequences_is_reproduced(printed, trained):
    with_pos = _held_out_accuracy(trained["with"][2], True)
    without = _held_out_accuracy(trained["without"][2], False)
    assert close(number(printed, r"held-out accuracy with positions, 1000 fresh sequences: ([0-9.]+)"), with_pos, 3)
    assert close(number(printed, r"held-out accuracy without positions: ([0-9.]+)"), without, 3)
    assert close(number(printed, r"chance \(a random guess among 5 tokens\): ([0-9.]+)"), 1 / VOCAB, 3)
    assert with_pos > 0.99 and without < 0.7  # a rule, learned; and the bag of tokens is not enough
