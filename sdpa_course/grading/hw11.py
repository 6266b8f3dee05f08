"""Homework 11: reading a circuit (a head's scores and a knock-out, on chapter 11's tiny model).

Learner functions (chapter 11's notation; ``weights`` is (batch, heads, n, n),
query by key, and ``lengths`` (batch,) gives each sequence's block length L):

``previous_token_score(weights, lengths)``
    Per head, the mean weight from each query i in 1 .. 2 L - 1 to key
    i - 1, over every such query of every sequence (shape (heads,)).
``induction_score(weights, lengths)``
    Per head, the mean weight from each query i in L .. 2 L - 2 to key
    i - L + 1, the token after the earlier copy of token i.
``attention_layer(x, w_q, w_k, w_v, w_o, knocked)``
    One layer of the tiny model: ``x + sum_g softmax(q_g k_g^T / sqrt(d_head)) v_g W_O,g``
    (causal) over the heads g not in ``knocked`` (a knocked-out head adds nothing).

Expected values come from ``lib.tiny_lm.previous_token_score``,
``lib.tiny_lm.induction_score`` and the residual streams of
``lib.tiny_lm.forward(..., knock_out=...)``. The inputs are the committed
model's (``lib.tiny_lm.checkpoint()``) attention weights and streams on
sequences drawn from each learner's seed, and random causal weights and layers
of other sizes.

Tolerances. A score is a mean of m weights in [0, 1]: any order of adding
them (a loop, ``np.trace``, ``np.diagonal``, float64 inside) is within
``m eps`` of the exact mean, far inside the float64 base tolerance of
:data:`grading.compare.RTOL`. A layer is three products of d terms, scores of
d_head terms, a softmax (amplifying by 1 + B, B the largest scaled score),
a sum of n values and one of d_head by the output projection, added to x:
``4 eps (1 + d + d_head + n)(1 + B)`` relative to ``|x| + ``the products on
absolute values. The mistakes named below move the values by far more;
``tests/test_homework_tolerances.py`` grades independent implementations.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module
from types import ModuleType
from typing import Any

import numpy as np

from .authoring import describe_inputs, generator, judge_each, normal
from .check import Assignment
from .compare import RTOL, Mismatch, check_form, compare_arrays, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case
from .rules import IN_PLACE

A = Assignment("hw11_reading_a_circuit", chapter="chapters/11_a_tiny_model_that_reads.md")

#: The rules beyond calling the reference that these checks apply: every input is float64 (the
#: model's own precision), so the dtype rule, which prices a float32 input answered in float64, never applies.
RULES = (IN_PLACE,)

EPS = float(np.finfo(np.float64).eps)


def _tiny_lm() -> ModuleType:
    """``lib.tiny_lm``, imported where expected values are computed (as :func:`reference` imports lib)."""
    reference()
    return import_module("sdpa_course.lib.tiny_lm")


@cache
def _model() -> tuple[Any, dict[str, np.ndarray]]:
    """The committed model's config and weights (read once per process)."""
    tiny_lm = _tiny_lm()
    cfg, run = tiny_lm.load(tiny_lm.checkpoint())
    return cfg, run.params


def _sequences(gen: np.random.Generator, batch: int) -> tuple[np.ndarray, np.ndarray]:
    cfg, _ = _model()
    tokens, lengths = _tiny_lm().make_batch(gen, batch, cfg.half, cfg.vocab, cfg.min_half)
    return tokens, lengths


def _model_weights(tokens: np.ndarray) -> list[np.ndarray]:
    """The committed model's attention weights on ``tokens``, per layer (batch, heads, n, n)."""
    _, params = _model()
    weights: list[np.ndarray] = _tiny_lm().forward(params, tokens).weights
    return weights


def _random_weights(gen: np.random.Generator, batch: int, heads: int, n: int) -> np.ndarray:
    """Causal softmax rows of random scores: weights no trained head would give."""
    scores = normal(gen, (batch, heads, n, n), np.float64, 10.0 ** gen.uniform(0, 0.7))
    scores = np.where(np.tri(n, dtype=bool), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    out: np.ndarray = e / e.sum(axis=-1, keepdims=True)
    return out


# ------------------------------------------------------------- the two scores and their usual mistakes


def _pairs(ranges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(sequence, query) of every query start <= i < stop, with sequence b's (start, stop) = ranges[b]."""
    pairs = [(b, i) for b, (start, stop) in enumerate(ranges) for i in range(start, stop)]
    if not pairs:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    seq, pos = (np.array(p, dtype=int) for p in zip(*pairs))
    return seq, pos


def _mean_at(weights: np.ndarray, seq: np.ndarray, query: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Per head, the mean of weights[b, :, i, j] over the pairs; a key outside 0 .. i counts as 0."""
    n = weights.shape[-1]
    inside = (key >= 0) & (key <= query) & (key < n)
    picked = weights[seq, :, query, np.clip(key, 0, n - 1)] * inside[:, None]
    out: np.ndarray = picked.mean(axis=0)
    return out


def _mean_of_means(weights: np.ndarray, seq: np.ndarray, query: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Per head, the mean over sequences of each sequence's own mean (the wrong weighting)."""
    means = [_mean_at(weights, seq[seq == b], query[seq == b], key[seq == b]) for b in np.unique(seq)]
    out: np.ndarray = np.mean(means, axis=0)
    return out


def score_variant(weights: np.ndarray, lengths: np.ndarray, score: str, mistake: str | None = None) -> np.ndarray:
    """A score ("previous" or "induction") in float64, right or with one of :data:`SCORE_HINTS`' mistakes."""
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[-1]
    half = n // 2
    blocks = [half if mistake == "fixed_half" else int(L) for L in np.asarray(lengths).tolist()]
    if score == "previous":
        seq, query = _pairs([(0 if mistake == "query_0" else 1, n if mistake == "filler" else 2 * L) for L in blocks])
        key = {"same_position": query, "transposed": query + 1}.get(mistake or "", query - 1)
    else:
        last = 0 if mistake == "last_query" else 1
        seq, query = _pairs([(0 if mistake == "first_block" else L, 2 * L - last) for L in blocks])
        key = query - np.array(blocks, dtype=int)[seq] + (0 if mistake == "the_copy" else 1)
    if mistake == "mean_of_means":
        return _mean_of_means(w, seq, query, key)
    return _mean_at(w, seq, query, key)


_AXIS_HINT = (
    "average over every (sequence, query) pair at once, keeping the heads: gather the weights into an array "
    "of shape (pairs, heads) and take .mean(axis=0)"
)

#: Score mistakes, by name: (the score it is tried on, the hint that names it).
SCORE_HINTS = {
    "same_position": (
        "previous",
        "it matches the weight from query i to key i itself (the main diagonal): the previous-token score reads "
        "the diagonal just below it, weights[..., i, i - 1] (np.diagonal with offset=-1 on the last two axes)",
    ),
    "transposed": (
        "previous",
        "it matches weights[..., i - 1, i], query i - 1 to key i: that is above the diagonal, where a causal "
        "head's weights are 0; the first index is the query, so read weights[..., i, i - 1]",
    ),
    "query_0": (
        "previous",
        "it matches counting query 0 too: query 0 has no previous token; average over the queries i = 1 .. 2 L - 1",
    ),
    "filler": (
        "previous",
        "it matches counting every query up to n - 1: positions from 2 L on are random filler after the repeat "
        "(a sequence whose block is shorter than n / 2 has some); average over i = 1 .. 2 L - 1 of each sequence",
    ),
    "the_copy": (
        "induction",
        "it matches the weight to key i - L, the earlier copy of token i itself: an induction head attends to "
        "the token after that copy, key i - L + 1, whose token comes next",
    ),
    "fixed_half": (
        "induction",
        "it matches using n / 2 as every sequence's block length: each sequence has its own L (lengths[b]), "
        "its repeat is i = L .. 2 L - 2, and its induction diagonal is offset by L - 1",
    ),
    "first_block": (
        "induction",
        "it matches counting the first block's queries too: they have no earlier copy to find (key i - L + 1 "
        "would be before the sequence starts); average over the repeat's queries i = L .. 2 L - 2 only",
    ),
    "last_query": (
        "induction",
        "it matches counting query 2 L - 1 as well: the score counts the queries i = L .. 2 L - 2, whose next "
        "token is a repeat too",
    ),
    "mean_of_means": (
        "both",
        "it matches the mean over the sequences of each sequence's own mean: sequences with longer blocks have "
        "more queries and count more; " + _AXIS_HINT,
    ),
}


def _judge_score(score: str) -> Any:
    def judge(cases: list[Case], results: list[ResultRecord]) -> str:
        tiny_lm = _tiny_lm()
        reference_score = tiny_lm.previous_token_score if score == "previous" else tiny_lm.induction_score

        def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
            weights, lengths = args
            expected = reference_score(weights, lengths)
            batch, heads = weights.shape[:2]
            if isinstance(got, np.ndarray) and got.ndim <= 1 and got.shape != expected.shape:
                raise Mismatch(
                    f"{name} returned shape {got.shape}; expected shape {expected.shape}, one score per head "
                    f"({heads} heads): {_AXIS_HINT}"
                )
            check_form(got, expected, what=name)
            m = max(1, weights.shape[-1] * batch)
            rtol = RTOL["float64"] + 4 * EPS * m
            try:
                compare_arrays(got, expected, what=name, rtol=rtol, scale=1.0)
            except Mismatch as exc:
                for mistake, (where, hint) in SCORE_HINTS.items():
                    if where not in (score, "both"):
                        continue
                    variant = score_variant(weights, lengths, score, mistake)
                    if np.allclose(got, variant, rtol=0, atol=1e-9) and not np.allclose(variant, expected, atol=1e-9):
                        raise Mismatch(f"{exc}. Hint: {hint}") from None
                raise

        which = "previous_token_score" if score == "previous" else "induction_score"
        return f"{judge_each(cases, results, one)} cases match lib.tiny_lm.{which}"

    return judge


def _score_case(call: str, weights: np.ndarray, lengths: np.ndarray, note: str) -> Case:
    label = describe_inputs(weights=weights) + f", block lengths {np.asarray(lengths).tolist()}, {note}"
    return make_case(call, weights, np.asarray(lengths, dtype=np.int64), label=label)


def _score_visible(call: str) -> Any:
    def cases(seed: int) -> list[Case]:
        tokens, lengths = _sequences(np.random.default_rng(2024), 4)
        weights = _model_weights(tokens)
        gen = generator(seed, 1)
        return [
            _score_case(call, weights[0], lengths, "layer 1 of chapter 11's model on 4 held-out sequences"),
            _score_case(call, weights[1], lengths, "layer 2 of chapter 11's model on the same sequences"),
            _score_case(call, _random_weights(gen, 3, 3, 10), np.array([5, 2, 4]), "random causal weights"),
        ]

    return cases


def _score_hidden(call: str, salt: int) -> Any:
    def cases(seed: int) -> list[Case]:
        gen = generator(seed, salt)
        tokens, lengths = _sequences(gen, int(gen.integers(3, 9)))
        weights = _model_weights(tokens)
        out = [
            _score_case(call, weights[layer], lengths, f"layer {layer + 1} of chapter 11's model") for layer in (0, 1)
        ]
        for _ in range(3):
            batch, heads, half = int(gen.integers(1, 5)), int(gen.integers(1, 5)), int(gen.integers(2, 9))
            lengths = gen.integers(2, half + 1, size=batch)
            lengths[0] = half
            w = _random_weights(gen, batch, heads, 2 * half + int(gen.integers(0, 3)))
            out.append(_score_case(call, w, lengths, "random causal weights"))
        return out

    return cases


# ------------------------------------------------------------- one layer, with heads knocked out


def layer_variant(
    x: np.ndarray, w_q: Any, w_k: Any, w_v: Any, w_o: Any, knocked: Any, mistake: str | None = None
) -> np.ndarray:
    """One layer in float64, right or with one of :data:`LAYER_HINTS`' mistakes."""
    z = np.asarray(x, dtype=np.float64)
    wq, wk, wv, wo = (np.asarray(w, dtype=np.float64) for w in (w_q, w_k, w_v, w_o))
    out_heads = {int(g) for g in knocked}
    q, k, v = (z[..., None, :, :] @ w for w in (wq, wk, wv))  # (..., heads, n, d_head)
    n, d_head = z.shape[-2], wq.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / (1.0 if mistake == "no_scale" else np.sqrt(d_head))
    for g in out_heads if mistake == "uniform" else set():
        scores[..., g, :, :] = 0.0
    if mistake != "not_causal":
        scores = np.where(np.tri(n, dtype=bool), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    written = (e / e.sum(axis=-1, keepdims=True)) @ v @ wo  # (..., heads, n, d)
    heads = range(wq.shape[0])
    keep = {
        "uniform": list(heads),
        "kept_only": sorted(out_heads),
        "ignored": list(heads),
    }.get(mistake or "", [g for g in heads if g not in out_heads])
    added = written[..., keep, :, :].sum(axis=-3)
    out: np.ndarray = added if mistake == "no_residual" else z + added
    return out


#: Layer mistakes, by name: the hint that names each.
LAYER_HINTS = {
    "uniform": (
        "it matches zeroing the knocked-out head's scores (or its queries or keys): its softmax then spreads the "
        "weight evenly over the keys j <= i, and the head still writes the mean of its values. Knocking a head out "
        "means its output is not added to the stream: leave it out of the sum"
    ),
    "kept_only": (
        "it matches keeping only the heads in knocked: those are the heads to leave out, and every other head "
        "is added to the stream"
    ),
    "ignored": "it matches adding every head: the heads in knocked must add nothing to the stream",
    "no_residual": (
        "it matches returning the heads' sum alone: a layer adds its heads' outputs to the stream it read, "
        "x + sum of the heads"
    ),
    "not_causal": "it matches attention without the causal mask: query i may read only the keys j <= i",
    "no_scale": "it matches scores without the scale: divide q k^T by sqrt(d_head), the width of one head",
}

#: This module's named mistakes as usual-mistake keys, "hw11.<piece>.<mistake>" -> the table's hint
#: (grading.all_hints reads them alongside HINTS, so the corpus declares them by key).
MISTAKES: dict[str, str] = {
    **{f"hw11.score.{k}": h for k, (_, h) in SCORE_HINTS.items()},
    **{f"hw11.layer.{k}": h for k, h in LAYER_HINTS.items()},
}


def layer_tolerance(x: np.ndarray, w_q: Any, w_k: Any, w_v: Any, w_o: Any) -> tuple[float, np.ndarray]:
    """(rtol, scale) of a layer's output; see the module's docstring."""
    z = np.asarray(x, dtype=np.float64)
    q, k = z[..., None, :, :] @ w_q, z[..., None, :, :] @ w_k
    n, d = z.shape[-2:]
    d_head = np.shape(w_q)[-1]
    big = float(np.abs(q @ np.swapaxes(k, -1, -2)).max(initial=0.0)) / np.sqrt(d_head)
    value_bound = (np.abs(z)[..., None, :, :] @ np.abs(w_v)).max(axis=-2, keepdims=True) @ np.abs(w_o)
    scale: np.ndarray = np.maximum(1.0, np.abs(z) + value_bound.sum(axis=-3))
    return RTOL["float64"] + 4 * EPS * (1 + d + d_head + n) * (1 + big), scale


def _judge_layer(cases: list[Case], results: list[ResultRecord]) -> str:
    tiny_lm = _tiny_lm()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, w_q, w_k, w_v, w_o, knocked = args
        heads = w_q.shape[0]
        knocked = [int(g) for g in knocked]
        # lib's forward on a one-layer model whose "embedding" is x itself, one token per position
        flat = x.reshape(-1, *x.shape[-2:])
        b, n, d = flat.shape
        params = {
            "W_E": flat.reshape(b * n, d),
            "W_pos": np.zeros((n, d)),
            "Q0": w_q,
            "K0": w_k,
            "V0": w_v,
            "O0": w_o,
            "W_U": np.zeros((d, 1)),
        }
        tokens = np.arange(b * n).reshape(b, n)
        stream = tiny_lm.forward(params, tokens, knock_out=[(0, g) for g in knocked]).streams[-1]
        expected = stream.reshape(x.shape)
        check_form(got, expected, what=name)
        rtol, scale = layer_tolerance(x, w_q, w_k, w_v, w_o)
        try:
            compare_arrays(got, expected, what=name, rtol=rtol, scale=scale)
        except Mismatch as exc:
            for mistake, hint in LAYER_HINTS.items():
                if mistake in ("uniform", "ignored") and not knocked:
                    continue
                if mistake == "kept_only" and len(knocked) == heads:
                    continue
                variant = layer_variant(x, w_q, w_k, w_v, w_o, knocked, mistake)
                try:
                    compare_arrays(got, variant, what=name, rtol=rtol, scale=scale, check_dtype=False)
                except Mismatch:
                    continue
                raise Mismatch(f"{exc}. Hint: {hint}") from None
            raise

    return f"{judge_each(cases, results, one)} cases match the stream of lib.tiny_lm.forward(..., knock_out=...)"


def _layer_case(x: np.ndarray, layer: tuple[np.ndarray, ...], knocked: list[int], note: str) -> Case:
    label = describe_inputs(x=x, w_q=layer[0]) + f", knocked = {knocked}, {note}"
    return make_case("attention_layer", x, *layer, [int(g) for g in knocked], label=label)


def _model_layer(layer: int) -> tuple[np.ndarray, ...]:
    _, params = _model()
    return tuple(params[f"{name}{layer}"] for name in "QKVO")


def _streams(tokens: np.ndarray) -> list[np.ndarray]:
    _, params = _model()
    streams: list[np.ndarray] = _tiny_lm().forward(params, tokens).streams
    return streams


def _layer_visible(seed: int) -> list[Case]:
    tokens, _ = _sequences(np.random.default_rng(2024), 4)
    streams = _streams(tokens)
    return [
        _layer_case(streams[0], _model_layer(0), [], "layer 1 of chapter 11's model, no head knocked out"),
        _layer_case(streams[1], _model_layer(1), [0], "layer 2 of chapter 11's model, head 0 knocked out"),
        _layer_case(streams[0], _model_layer(0), [0, 1], "layer 1, both heads knocked out"),
    ]


def _random_layer(gen: np.random.Generator, d: int, heads: int, d_head: int) -> tuple[np.ndarray, ...]:
    return tuple(normal(gen, (heads, d, d_head), np.float64, d**-0.5) for _ in "QKV") + (
        normal(gen, (heads, d_head, d), np.float64, (heads * d_head) ** -0.5),
    )


def _layer_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 3)
    tokens, _ = _sequences(gen, int(gen.integers(2, 5)))
    streams = _streams(tokens)
    out = []
    for layer in (0, 1):
        knocked = [int(gen.integers(0, 2))]
        out.append(
            _layer_case(streams[layer], _model_layer(layer), knocked, f"layer {layer + 1} of chapter 11's model")
        )
    for i in range(3):
        heads, d_head, d = int(gen.integers(2, 5)), int(gen.integers(1, 6)), int(gen.integers(2, 9))
        lead = ((), (2,), (2, 2))[i]
        x = normal(gen, (*lead, int(gen.integers(2, 8)), d), np.float64, 10.0 ** gen.uniform(-0.3, 0.5))
        knocked = sorted({int(g) for g in gen.integers(0, heads, size=int(gen.integers(1, heads)))})
        out.append(_layer_case(x, _random_layer(gen, d, heads, d_head), knocked, "random weights"))
    return out


A.add(
    "previous_token_score",
    ["previous_token_score"],
    points=1,
    cases=_score_visible("previous_token_score"),
    judge=_judge_score("previous"),
    rules=RULES,
    description="both layers of chapter 11's model on 4 held-out sequences, random causal weights",
)
A.add(
    "previous_token_score_hidden",
    ["previous_token_score"],
    points=2,
    cases=_score_hidden("previous_token_score", 4),
    judge=_judge_score("previous"),
    rules=RULES,
    description="chapter 11's model on sequences of your own, random weights, heads, lengths and block lengths",
)
A.add(
    "induction_score",
    ["induction_score"],
    points=1,
    cases=_score_visible("induction_score"),
    judge=_judge_score("induction"),
    rules=RULES,
    description="the same inputs as previous_token_score",
)
A.add(
    "induction_score_hidden",
    ["induction_score"],
    points=2,
    cases=_score_hidden("induction_score", 5),
    judge=_judge_score("induction"),
    rules=RULES,
    description="chapter 11's model on sequences of your own, random weights, heads, lengths and block lengths",
)
A.add(
    "attention_layer",
    ["attention_layer"],
    points=2,
    cases=_layer_visible,
    judge=_judge_layer,
    rules=RULES,
    description="both layers of chapter 11's model on 4 held-out sequences, with no head, one head or both knocked out",
)
A.add(
    "attention_layer_hidden",
    ["attention_layer"],
    points=2,
    cases=_layer_hidden,
    judge=_judge_layer,
    rules=RULES,
    description="chapter 11's model on sequences of your own, random layers of 2 to 4 heads, batch dimensions",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_previous_token_score = notebook_check(A, "previous_token_score")
check_induction_score = notebook_check(A, "induction_score")
check_attention_layer = notebook_check(A, "attention_layer")
check_before_submit = before_submit_check(A)
