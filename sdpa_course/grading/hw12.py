"""Homework 12: rotary embeddings, grouped-query attention and decoding with a KV cache.

Learner functions (chapter 12's notation):

``rotate(x, positions)``
    Each pair of coordinates ``(2r, 2r + 1)`` of row i of ``x`` (..., n, d)
    turned by the angle ``positions[i] * omega_r``, ``omega_r = 10000 **
    (-2r / d)``: rotary position embeddings, as ``lib.rotate``.
``grouped_query_attention(q, k, v, is_causal=False)``
    h query heads (..., h, n_q, d_k) over h_kv shared heads of keys and values
    (..., h_kv, n_k, d); query head g reads key-value head ``g // (h / h_kv)``,
    as ``lib.grouped_query_attention``.
``decode_with_cache(x, w_q, w_k, w_v, n_heads, n_kv_heads, n_prompt)``
    A decoder's heads (..., n_heads, n, d_v), rotary embeddings on: the first
    ``n_prompt`` positions at once (the prefill, with the causal mask), then one
    position per step with a KV cache. Graded against
    ``lib.decoder_attention(..., rotary=True)``, the same heads computed all at
    once: a cached decode in float64 agrees with it to rounding.

Tolerances (eps of the dtype). A rotation computes ``a cos(phi) - b sin(phi)``
with ``phi = i omega_r``; the frequency computed any sound way (a power, an
exponential of a logarithm, a reciprocal) is off by about ``10 u`` relative, so
phi by ``10 u i``: :func:`rotate_tolerance` allows ``4 eps (1 + 10 (1 + P))``
for positions up to P, relative to twice the largest entry. Grouped-query
attention is attention head by head: chapter 8's :func:`~grading.authoring.attention_rtol`
(the softmax's rounding grows with the largest score) and the values' size.
A decode chains the projections (d_model terms), the rotations, the scores (d_k
terms) and the weighted sums (n terms): :func:`decode_tolerance` takes
:func:`~grading.authoring.logit_rtol` of the largest score those projections can
give, with ``T = d_model + d_k + n + 10 (1 + P)`` terms. The named mistakes
move the outputs in their first digits; ``tests/test_homework_tolerances.py``
grades independent correct implementations with these bounds.

Partial credit beyond the shares of :func:`grading.authoring.judge_each`: a
decode that is right but for a mistake of the learner's own ``rotate`` or
``grouped_query_attention`` (which their own checks already charge) earns
:data:`CARRIED_SHARE` of the case, and the message says which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .authoring import BATCHES, DTYPES, attention_rtol, describe_inputs, generator, judge_each, logit_rtol, normal
from .authoring.attention import value_scale
from .check import Assignment
from .compare import RTOL, Mismatch, Partial, check_form, compare_arrays, matches, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case

A = Assignment("hw12_kv_cache_gqa", chapter="chapters/12_attention_as_models_run_it.md")

#: The base of the rotary frequencies, as in Su et al. and lib.
BASE = 10000.0
#: Share of a decode case earned when the decode is right but for a mistake of the learner's
#: rotate or grouped_query_attention, which their own checks already charge.
CARRIED_SHARE = 0.5


def _eps(dtype: DTypeLike) -> float:
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype if dtype.kind == "f" else np.float64).eps)


# ------------------------------------------------------------- the usual mistakes, in float64

#: Mistakes of rotate, by name: the hint that names each.
ROTATE_HINTS = {
    "halves": (
        "it matches turning the pairs (x_r, x_{r + d/2}), the first half against the second: the pairs here "
        "are neighbours, (x_2r, x_2r+1), coordinates 0 and 1, 2 and 3, ..."
    ),
    "other_way": (
        "it matches turning by -angle: the pair (a, b) becomes (a cos - b sin, a sin + b cos), which turns "
        "it forward, by +positions[i] * omega_r"
    ),
    "slow_frequencies": (
        "it matches omega_r = 10000 ** (-r / d): pair r turns by 10000 ** (-2r / d) per position (2r, the "
        "index of the pair's first coordinate, over d)"
    ),
    "own_positions": (
        "it matches turning row i by i * omega_r: use the positions given (positions[i]), which need not "
        "start at 0 nor follow one another"
    ),
}

#: Mistakes of grouped_query_attention, by name: the hint that names each.
GQA_HINTS = {
    "tile": (
        "it matches query head g reading key-value head g % h_kv (np.tile, the groups interleaved): the "
        "query heads of a group are consecutive, head g reads key-value head g // (h / h_kv), as "
        "np.repeat(k, h // h_kv, axis=-3) lays them out"
    ),
    "first_head": ("it matches every query head reading key-value head 0: head g reads key-value head g // (h / h_kv)"),
    "no_scale": "it matches the scores without the scale 1/sqrt(d_k): divide q k^T by sqrt(d_k)",
    "not_causal": (
        "it matches attention without the causal mask: with is_causal=True query i may read only keys "
        "j <= i (set the other scores to -inf before the softmax)"
    ),
}


def rotate_variant(x: Any, positions: Any, mistake: str | None = None) -> np.ndarray:
    """Rotary embeddings in float64, right (``mistake=None``) or with one of :data:`ROTATE_HINTS`'s mistakes."""
    z = np.asarray(x, dtype=np.float64)
    n, d = z.shape[-2:]
    pos = np.arange(n) if mistake == "own_positions" else np.asarray(positions, dtype=np.float64)
    r = np.arange(d // 2)
    omega = BASE ** (-(r if mistake == "slow_frequencies" else 2 * r) / d)
    angles = pos[:, None] * omega * (-1 if mistake == "other_way" else 1)
    cos, sin = np.cos(angles), np.sin(angles)
    if mistake == "halves":
        a, b = z[..., : d // 2], z[..., d // 2 :]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    a, b = z[..., 0::2], z[..., 1::2]
    out = np.empty(z.shape)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def gqa_variant(q: Any, k: Any, v: Any, is_causal: bool = False, mistake: str | None = None) -> np.ndarray:
    """Grouped-query attention in float64, right or with one of :data:`GQA_HINTS`'s mistakes."""
    qa, ka, va = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    h, h_kv = qa.shape[-3], ka.shape[-3]
    if mistake == "tile":
        ka, va = (np.tile(a, (*([1] * (a.ndim - 3)), h // h_kv, 1, 1)) for a in (ka, va))
    elif mistake == "first_head":
        ka, va = (np.repeat(a[..., :1, :, :], h, axis=-3) for a in (ka, va))
    else:
        ka, va = (np.repeat(a, h // h_kv, axis=-3) for a in (ka, va))
    scale = 1.0 if mistake == "no_scale" else 1.0 / np.sqrt(qa.shape[-1])
    scores = qa @ np.swapaxes(ka, -1, -2) * scale
    if is_causal and mistake != "not_causal":
        scores = np.where(np.tri(*scores.shape[-2:]) > 0, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    out: np.ndarray = (e / e.sum(axis=-1, keepdims=True)) @ va
    return out


#: Mistakes in decoding with a cache, by name: the hint that names each.
DECODE_HINTS = {
    "prefill_not_causal": (
        "it matches a prefill without the causal mask: the prompt's positions are computed at once, so "
        "query i of the prompt must still read only keys j <= i (is_causal=True in that first step)"
    ),
    "queries_cached": (
        "it matches every query attending over the whole cache, later keys included: the queries were "
        "cached and attended again after later keys arrived; a query is used once, at its own step, "
        "when the cache holds positions 0..i. Cache only the keys and values"
    ),
    "cache_short": (
        "it matches a step whose query reads the cache without its own key and value (positions 0..i-1): "
        "append the new key and value first, then attend over positions 0..i, i + 1 of them"
    ),
    "cache_one_too_many": (
        "it matches a step whose query reads one slot past the new key (a zero key and value of a "
        "preallocated cache): at step i read positions 0..i, cache[..., : i + 1, :]"
    ),
    "keys_not_turned": (
        "it matches keys appended to the cache without their rotation (the queries turned): turn each key "
        "at its own position, rotate(k, [i]), before it enters the cache"
    ),
    "step_keys_not_turned": (
        "it matches the prompt right but each later key appended without its rotation: turn the key of "
        "step i at position i before appending it"
    ),
    "keys_turned_at_query": (
        "it matches every cached key turned at the query's position i: the two turns cancel and the "
        "positions are lost; turn each key once, at its own position, before it enters the cache"
    ),
    "no_rotary": (
        "it matches decoding without rotary embeddings: turn each query and each key at its own position "
        "with your rotate"
    ),
}

#: This module's named mistakes as usual-mistake keys, "hw12.<piece>.<mistake>" -> the table's hint
#: (grading.all_hints reads them alongside HINTS, so the corpus declares them by key).
MISTAKES: dict[str, str] = {
    **{f"hw12.rotate.{k}": h for k, h in ROTATE_HINTS.items()},
    **{f"hw12.gqa.{k}": h for k, h in GQA_HINTS.items()},
    **{f"hw12.decode.{k}": h for k, h in DECODE_HINTS.items()},
}

Rotate = Callable[[Any, Any], np.ndarray]
Attend = Callable[..., np.ndarray]


def decode_variant(
    x: Any,
    w_q: Any,
    w_k: Any,
    w_v: Any,
    n_heads: int,
    n_kv_heads: int,
    n_prompt: int,
    *,
    mistake: str | None = None,
    rotate_mistake: str | None = None,
    gqa_mistake: str | None = None,
) -> np.ndarray:
    """A cached decode in float64, right or with one of :data:`DECODE_HINTS`'s mistakes (or a carried one
    of :data:`ROTATE_HINTS` or :data:`GQA_HINTS`)."""
    z, wq, wk, wv = (np.asarray(a, dtype=np.float64) for a in (x, w_q, w_k, w_v))
    n = z.shape[-2]

    def heads(m: np.ndarray, count: int) -> np.ndarray:
        return np.swapaxes(m.reshape(*m.shape[:-1], count, m.shape[-1] // count), -2, -3)

    def turn(a: np.ndarray, pos: np.ndarray) -> np.ndarray:
        return rotate_variant(a, pos, rotate_mistake) if mistake != "no_rotary" else a

    def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
        return gqa_variant(q, k, v, causal, gqa_mistake)

    q, k, v = heads(z @ wq, n_heads), heads(z @ wk, n_kv_heads), heads(z @ wv, n_kv_heads)
    pos = np.arange(n)
    q_t = turn(q, pos)
    k_t = k if mistake == "keys_not_turned" else turn(k, pos)
    if mistake == "queries_cached":
        return attend(q_t, k_t, v)
    p = n_prompt
    rows = [attend(q_t[..., :p, :], k_t[..., :p, :], v[..., :p, :], mistake != "prefill_not_causal")]
    pad = np.zeros((*k.shape[:-2], 1, k.shape[-1])), np.zeros((*v.shape[:-2], 1, v.shape[-1]))
    for i in range(p, n):
        keys = k_t[..., : i + 1, :].copy()
        if mistake == "step_keys_not_turned":
            keys[..., p:, :] = k[..., p : i + 1, :]
        if mistake == "keys_turned_at_query":
            keys = turn(k[..., : i + 1, :], np.full(i + 1, i))
        values = v[..., : i + 1, :]
        if mistake == "cache_short":
            keys, values = keys[..., :i, :], values[..., :i, :]
        elif mistake == "cache_one_too_many" and i + 1 < n:
            keys, values = np.concatenate([keys, pad[0]], axis=-2), np.concatenate([values, pad[1]], axis=-2)
        rows.append(attend(q_t[..., i : i + 1, :], keys, values))
    return np.concatenate(rows, axis=-2)


# ------------------------------------------------------------- rotate


def rotate_tolerance(x: np.ndarray, positions: np.ndarray) -> tuple[float, float]:
    """(rtol, scale) of a rotation: see the module's docstring."""
    top = float(np.abs(np.asarray(positions, dtype=np.float64)).max(initial=0.0))
    rtol = RTOL.get(x.dtype.name, RTOL["float64"]) + 4 * _eps(x.dtype) * (1 + 10 * (1 + top))
    return rtol, max(1.0, 2 * float(np.abs(x.astype(np.float64)).max(initial=0.0)))


def _rotate_case(x: np.ndarray, positions: np.ndarray, note: str = "") -> Case:
    label = describe_inputs(x=x) + f", positions {positions.tolist()}" + (f", {note}" if note else "")
    return make_case("rotate", x, positions, label=label)


def _rotate_visible(seed: int) -> list[Case]:
    gen = generator(seed, 1)
    pair = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])
    return [
        _rotate_case(pair, np.array([0, 1]), "(1, 0, 1, 0) at positions 0 and 1"),
        _rotate_case(normal(gen, (3, 6)), np.array([4, 5, 6]), "a query at positions 4 to 6"),
        _rotate_case(normal(gen, (2, 3, 8), np.float32), np.array([0, 2, 7]), "a batch"),
    ]


def _rotate_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 2)
    out = []
    for i in range(6):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 2) % 2]
        n, d = int(gen.integers(2, 6)), 2 * int(gen.integers(1, 6))
        positions = np.sort(gen.choice(60, size=n, replace=False)).astype(np.int64)
        out.append(_rotate_case(normal(gen, (*lead, n, d), dtype, 10.0 ** gen.uniform(-0.5, 1)), positions))
    return out


def _judge_rotate(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, positions = args
        expected = lib.rotate(x, positions)
        rtol, scale = rotate_tolerance(x, positions)
        try:
            compare_arrays(got, expected, what=name, rtol=rtol, scale=scale)
        except Mismatch as exc:
            for mistake, hint in ROTATE_HINTS.items():
                if matches(got, rotate_variant(x, positions, mistake), rtol, scale):
                    raise Mismatch(f"{exc}. Hint: {hint}") from None
            raise

    return f"{judge_each(cases, results, one)} cases match lib.rotate"


# ------------------------------------------------------------- grouped_query_attention


def _gqa_case(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, note: str = "") -> Case:
    label = describe_inputs(q=q, k=k, v=v) + f", is_causal={causal}" + (f", {note}" if note else "")
    return make_case("grouped_query_attention", q, k, v, label=label, is_causal=causal)


def _gqa_visible(seed: int) -> list[Case]:
    gen = generator(seed, 3)
    q, k, v = normal(gen, (4, 5, 4)), normal(gen, (2, 5, 4)), normal(gen, (2, 5, 3))
    q32, k32, v32 = (normal(gen, s, np.float32) for s in ((2, 6, 3, 2), (2, 1, 4, 2), (2, 1, 4, 2)))
    return [
        _gqa_case(q, k, v, True, "4 query heads in 2 groups"),
        _gqa_case(q, k, v, False, "the same without the mask"),
        _gqa_case(q, k[:1], v[:1], True, "one key-value head: multi-query attention"),
        _gqa_case(q32, k32, v32, False, "a batch, 6 query heads reading one key-value head, n_q != n_k"),
    ]


#: (h, h_kv) of the hidden cases: groups of several heads, MHA (h_kv = h) and MQA (h_kv = 1).
HEADS = ((4, 2), (6, 3), (4, 1), (3, 3), (8, 2), (6, 2))


def _gqa_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 4)
    out = []
    for i, (h, h_kv) in enumerate(HEADS):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 2) % 2]
        causal = i % 3 != 2
        n_q = int(gen.integers(2, 6))
        n_k = n_q if causal else int(gen.integers(1, 6))
        d_k, d_v = int(gen.integers(1, 6)), int(gen.integers(1, 5))
        if i == 0:  # every seed's first case has a scale to get wrong (none matters for d_k = 1)
            d_k = max(d_k, 2)
        spread = 10.0 ** gen.uniform(-0.3, 0.5)
        q = normal(gen, (*lead, h, n_q, d_k), dtype, spread)
        k = normal(gen, (*lead, h_kv, n_k, d_k), dtype, spread)
        out.append(_gqa_case(q, k, normal(gen, (*lead, h_kv, n_k, d_v), dtype), causal))
    return out


def _judge_gqa(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        q, k, v = args
        causal = bool(kwargs.get("is_causal", False))
        expected = lib.grouped_query_attention(q, k, v, is_causal=causal)
        if isinstance(got, np.ndarray) and got.shape[-3:] == (k.shape[-3], *expected.shape[-2:]) and got.ndim:
            if k.shape[-3] != q.shape[-3]:
                raise Mismatch(
                    f"{name} returned shape {got.shape}, one output per key-value head; expected shape "
                    f"{expected.shape}, one per query head (..., h, n_q, d_v): every query head gives its own output"
                )
        check_form(got, expected, what=name)
        rtol, scale = attention_rtol(q, k), value_scale(v)
        try:
            compare_arrays(got, expected, what=name, rtol=rtol, scale=scale)
        except Mismatch as exc:
            for mistake, hint in GQA_HINTS.items():
                if mistake == "not_causal" and not causal:
                    continue
                if matches(got, gqa_variant(q, k, v, causal, mistake), rtol, scale):
                    raise Mismatch(f"{exc}. Hint: {hint}") from None
            raise

    return f"{judge_each(cases, results, one)} cases match lib.grouped_query_attention"


# ------------------------------------------------------------- decode_with_cache


def decode_tolerance(
    x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, n_heads: int
) -> tuple[float, float]:
    """(rtol, scale) of a decode's heads: see the module's docstring."""
    z, wq, wk, wv = (np.asarray(a, dtype=np.float64) for a in (x, w_q, w_k, w_v))
    n, d_model = z.shape[-2:]
    d_k = wq.shape[1] // n_heads

    def widest(m: np.ndarray) -> float:
        """The longest head row of m (a rotation keeps the length)."""
        parts = m.reshape(*m.shape[:-1], m.shape[-1] // d_k, d_k)
        return float(np.linalg.norm(parts, axis=-1).max(initial=0.0))

    bound = widest(z @ wq) * widest(z @ wk) / np.sqrt(d_k)
    rtol = logit_rtol(x.dtype, bound, terms=d_model + d_k + n + 10 * (1 + n))
    return rtol, max(1.0, float((np.abs(z) @ np.abs(wv)).max(initial=0.0)))


def _decode_case(x: np.ndarray, weights: list[np.ndarray], h: int, h_kv: int, n_prompt: int, note: str = "") -> Case:
    w_q, w_k, w_v = weights
    label = describe_inputs(x=x, w_q=w_q, w_k=w_k) + f", n_heads = {h}, n_kv_heads = {h_kv}, n_prompt = {n_prompt}"
    return make_case(
        "decode_with_cache", x, w_q, w_k, w_v, h, h_kv, n_prompt, label=label + (f", {note}" if note else "")
    )


def _decode_weights(
    gen: np.random.Generator, d_model: int, h: int, h_kv: int, d_k: int, d_v: int, dtype: DTypeLike
) -> list[np.ndarray]:
    s = d_model**-0.5
    return [normal(gen, (d_model, w), dtype, s) for w in (h * d_k, h_kv * d_k, h_kv * d_v)]


def _decode_visible(seed: int) -> list[Case]:
    lib = reference()
    _, x = lib.example_sentence(d_model=16)
    gen = generator(seed, 5)
    return [
        _decode_case(x, _decode_weights(gen, 16, 4, 2, 4, 4, np.float64), 4, 2, 2, "the example sentence"),
        _decode_case(x, _decode_weights(gen, 16, 4, 4, 4, 4, np.float64), 4, 4, 1, "multi-head, prompt of one"),
        _decode_case(
            normal(gen, (2, 5, 6), np.float32), _decode_weights(gen, 6, 2, 1, 4, 3, np.float32), 2, 1, 3, "a batch"
        ),
    ]


def _decode_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 6)
    out = []
    for i, (h, h_kv) in enumerate(HEADS[:5]):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 2) % 2]
        n, d_model = int(gen.integers(4, 8)), int(gen.integers(4, 10))
        d_k, d_v = 2 * int(gen.integers(1, 3)), int(gen.integers(1, 4))
        if i == 0:  # two pairs of coordinates in every seed's first case: with one, the rotation's
            d_k = 4  # pairing and its frequencies cannot be wrong
        n_prompt = int(gen.integers(1, n - 1))
        x = normal(gen, (*lead, n, d_model), dtype, 10.0 ** gen.uniform(-0.2, 0.4))
        out.append(_decode_case(x, _decode_weights(gen, d_model, h, h_kv, d_k, d_v, dtype), h, h_kv, n_prompt))
    return out


def _judge_decode(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, w_q, w_k, w_v, h, h_kv, n_prompt = args
        expected = lib.decoder_attention(x, w_q, w_k, w_v, n_heads=h, n_kv_heads=h_kv, rotary=True)
        check_form(got, expected, what=name)
        rtol, scale = decode_tolerance(x, w_q, w_k, w_v, h)
        try:
            compare_arrays(got, expected, what=name, rtol=rtol, scale=scale)
        except Mismatch as exc:
            shape = (x, w_q, w_k, w_v, h, h_kv, n_prompt)
            named = [h for m, h in DECODE_HINTS.items() if matches(got, decode_variant(*shape, mistake=m), rtol, scale)]
            # Two mistakes that give the same outputs on this case (with a one-position prompt, keys turned
            # at the query's position and no rotary at all) cannot be told apart: name neither.
            if len(named) == 1:
                raise Mismatch(f"{exc}. Hint: {named[0]}") from None
            carried: list[tuple[str, str, str | None, str | None]]
            carried = [("rotate", ROTATE_HINTS[m], m, None) for m in ROTATE_HINTS]
            carried += [("grouped_query_attention", GQA_HINTS[m], None, m) for m in GQA_HINTS]
            for piece, hint, rotate_mistake, gqa_mistake in carried:
                variant = decode_variant(*shape, rotate_mistake=rotate_mistake, gqa_mistake=gqa_mistake)
                if matches(got, variant, rtol, scale):
                    raise Partial(
                        f"{exc}. The decode itself is right: the difference is your {piece}, whose own test "
                        f"names the mistake ({hint}); this case earns {CARRIED_SHARE:.0%} until {piece} is fixed",
                        CARRIED_SHARE,
                    ) from None
            raise

    return f"{judge_each(cases, results, one)} cases match lib.decoder_attention(..., rotary=True)"


A.add(
    "rotate",
    ["rotate"],
    points=1,
    cases=_rotate_visible,
    judge=_judge_rotate,
    description="(1, 0, 1, 0) at positions 0 and 1, a query at positions 4 to 6, a float32 batch",
)
A.add(
    "rotate_hidden",
    ["rotate"],
    points=1,
    cases=_rotate_hidden,
    judge=_judge_rotate,
    description="random widths and positions up to 59, batch dimensions, float32 and float64",
)
A.add(
    "grouped_query_attention",
    ["grouped_query_attention"],
    points=1,
    cases=_gqa_visible,
    judge=_judge_gqa,
    description="4 query heads in 2 groups with and without the mask, one key-value head, a float32 batch",
)
A.add(
    "grouped_query_attention_hidden",
    ["grouped_query_attention"],
    points=2,
    cases=_gqa_hidden,
    judge=_judge_gqa,
    description="groups of 2 to 4 heads, multi-head and multi-query, batch dimensions, float32 and float64",
)
A.add(
    "decode_with_cache",
    ["decode_with_cache"],
    points=2,
    cases=_decode_visible,
    judge=_judge_decode,
    description="the example sentence with 2 groups and with 4 heads, a float32 batch with one key-value head",
)
A.add(
    "decode_with_cache_hidden",
    ["decode_with_cache"],
    points=3,
    cases=_decode_hidden,
    judge=_judge_decode,
    description="random sizes and prompts, groups, multi-head and multi-query, batch dimensions, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_rotate = notebook_check(A, "rotate")
check_grouped_query_attention = notebook_check(A, "grouped_query_attention")
check_decode_with_cache = notebook_check(A, "decode_with_cache")
check_before_submit = before_submit_check(A)
