"""Homework 6: the causal mask and masked attention.

Learner functions: ``causal_mask(n_q, n_k)`` returns a boolean (n_q, n_k)
array, True where query i may attend to key j, i.e. j <= i (aligned at the
top left); ``masked_attention(q, k, v, mask)`` returns ``(output, weights)``
of scaled dot-product attention where ``mask`` (boolean, broadcastable to
(..., n_q, n_k), True = may attend) forbids keys before the softmax; a query
with no permitted key gets zero weights and a zero output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .authoring import (
    BATCHES,
    DTYPES,
    check_attention,
    describe_inputs,
    generator,
    inexact_root,
    judge_each,
    normal,
    sentence_qkv,
)
from .check import Assignment
from .compare import Mismatch, Partial, compare_arrays, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case
from .rules import DTYPE, DTYPE_SHARE, IN_PLACE, MASK_FORM, PRECISION

A = Assignment("hw6_causal_masking", chapter="chapters/06_causal_masking.md")


def _mask_case(n_q: int, n_k: int) -> Case:
    return make_case("causal_mask", n_q, n_k, label=f"n_q = {n_q}, n_k = {n_k}")


def _mask_visible(seed: int) -> list[Case]:
    return [_mask_case(4, 4), _mask_case(2, 5), _mask_case(5, 2)]


def _mask_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 1)
    sizes = [(1, 1), (0, 3), (3, 0)] + [tuple(int(n) for n in gen.integers(1, 12, size=2)) for _ in range(5)]
    return [_mask_case(*s) for s in sizes]


def _mask_form(got: Any, expected: np.ndarray, name: str) -> None:
    """Raise :class:`Partial` for a mask with the right pattern in another form: 0/1 numbers
    instead of booleans, or extra leading axes of size 1 (:data:`~grading.rules.MASK_FORM`)."""
    if not isinstance(got, np.ndarray) or (got.dtype == np.bool_ and got.shape == expected.shape):
        return
    differences = []
    extra = got.ndim - expected.ndim
    if got.shape != expected.shape:
        if extra <= 0 or got.shape[extra:] != expected.shape or any(n != 1 for n in got.shape[:extra]):
            return
        differences.append(f"it has shape {got.shape}, with an extra leading axis of size 1; expected {expected.shape}")
    pattern = got.reshape(expected.shape)
    if pattern.dtype != np.bool_:
        if pattern.dtype.kind not in "iuf" or not np.isin(pattern, (0, 1)).all():
            return
        differences.append(f"it holds 0/1 numbers of dtype {got.dtype}; expected dtype bool")
        pattern = pattern != 0
    if np.array_equal(pattern, expected):
        raise Partial(
            f"{name}: the pattern is right, but {'; and '.join(differences)}. {MASK_FORM.statement}", DTYPE_SHARE
        )


def _judge_mask(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        n_q, n_k = args
        expected = lib.causal_mask(n_q, n_k)
        _mask_form(got, expected, name)
        if isinstance(got, np.ndarray) and got.shape == expected.shape and got.dtype == np.bool_:
            future = got & ~expected
            if future.any():
                i, j = (int(t) for t in np.argwhere(future)[0])
                raise Mismatch(
                    f"{name}: entry ({i}, {j}) is True, so query {i} may see key {j}, a future position (j > i)"
                )
            missing = expected & ~got
            if missing.any():
                i, j = (int(t) for t in np.argwhere(missing)[0])
                raise Mismatch(
                    f"{name}: entry ({i}, {j}) is False, but query {i} may attend to key {j} "
                    "(j <= i, itself and earlier positions)"
                )
        compare_arrays(got, expected, what=name)

    return f"{judge_each(cases, results, one)} masks match lib.causal_mask"


def _att_case(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray, note: str) -> Case:
    return make_case("masked_attention", q, k, v, mask, label=describe_inputs(q=q, k=k, v=v) + f", {note}")


def _att_visible(seed: int) -> list[Case]:
    lib = reference()
    q, k, v = sentence_qkv()
    gen = generator(seed, 2)
    q32, k32, v32 = (normal(gen, (2, 4, d), np.float32) for d in (3, 3, 2))
    some = np.array(
        [
            [True, False, True, False],
            [False, False, False, False],
            [True, True, False, False],
            [False, False, False, True],
        ]
    )
    return [
        _att_case(q, k, v, lib.causal_mask(6), "causal mask"),
        _att_case(q32, k32, v32, lib.causal_mask(4), "causal mask"),
        _att_case(q32[0], k32[0], v32[0], some, "a mask with a row of all False"),
    ]


def _att_hidden(seed: int) -> list[Case]:
    lib = reference()
    gen = generator(seed, 3)
    out = []
    for i in range(10):
        # Cases 2, 5 and 8 have a fully masked query, one in each shape of BATCHES (2-D too),
        # whatever the seed; the other kinds of mask cycle through the shapes as well.
        # Case 0 has a forbidden key scoring FAR above query 0's permitted one, whatever the seed, and a
        # query 1 whose forbidden keys hold a third or more of its softmax over every key.
        lead, dtype = BATCHES[(i + i // 3) % len(BATCHES)], DTYPES[(i // 2) % 2]
        n_q, n_k, d_k, d_v = (int(gen.integers(1, 8)) for _ in range(4))
        if i == 0:
            n_k = max(n_k, 2)  # query 0 has a future key (see below)
        scale = 10.0 ** gen.uniform(-1, 1) if dtype == np.float32 else 10.0 ** gen.uniform(-1, 1.7)
        if i == 1:  # float64: every seed has a case where a scale computed in float32 shows, with
            # inputs of unit scale (scores neither too small for it to matter nor so spread that the
            # weights are all 0 or 1) and a query that may attend to two keys (see below)
            d_k, scale, n_k = inexact_root(d_k), 1.0, max(n_k, 2)
        q, k = normal(gen, (*lead, n_q, d_k), dtype, scale), normal(gen, (*lead, n_k, d_k), dtype, scale)
        v = normal(gen, (*lead, n_k, d_v), dtype)
        if i == 0:
            q, k, v = _two_queries_three_keys(q, k, v)
            _far_future_key(q, k)
            mask = lib.causal_mask(q.shape[-2], k.shape[-2])
            note = f"causal mask; query 0's last key scores {FAR:g} above its own"
        elif i % 3 == 0:
            mask, note = lib.causal_mask(n_q, n_k), "causal mask"
        elif i % 3 == 1:
            mask, note = gen.random((n_q, n_k)) < 0.6, "random mask (n_q, n_k)"
            if i == 1:
                mask[0, :2] = True
        else:
            mask, note = gen.random((*lead, n_q, n_k)) < 0.5, "random mask with a fully masked query"
            mask.reshape(-1, n_k)[0] = False  # one query with nothing permitted
        out.append(_att_case(q, k, v, mask, note))
    return out


#: How far query 0's forbidden last key scores above its permitted key in hidden case 0 (float64,
#: causal): exp(-FAR) is 0, so a softmax over every key, with the forbidden weights zeroed and
#: the rest renormalised afterwards, leaves that query no weight at all; masking before the
#: softmax, as the task says, does not care how large a forbidden score is.
FAR = 1000.0


def _two_queries_three_keys(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, ...]:
    """At least two queries and three keys, without drawing more numbers (so that the later cases
    stay as they are): a query added is a row of zeros, a key and its value added copy the first."""
    if q.shape[-2] < 2:
        q = np.concatenate([q, np.zeros_like(q[..., :1, :])], axis=-2)
    while k.shape[-2] < 3:
        k, v = (np.concatenate([a, a[..., :1, :]], axis=-2) for a in (k, v))
    return q, k, v


def _far_future_key(q: np.ndarray, k: np.ndarray) -> None:
    """Make the last key (forbidden to query 0 under a causal mask) score FAR above key 0 for query 0,
    and query 1 zero: it scores every key 0, so a softmax over every key gives its future keys
    (1 - 2 / n_k) of its weight. Zeroing those afterwards without renormalising then shows in query 1,
    renormalising does not: the two ways of masking after the softmax are told apart on this case."""
    q[..., 1, :] = 0
    q0 = q[..., 0, :].astype(np.float64)
    d_k = q.shape[-1]
    own = float(q0 @ k[..., 0, :].astype(np.float64)) / np.sqrt(d_k)
    k[..., -1, :] = q0 * ((own + FAR) * np.sqrt(d_k) / max(float(q0 @ q0), 1e-300))


def _judge_attention(cases: list[Case], results: list[ResultRecord]) -> str:
    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        q, k, v, mask = args
        causal = mask.ndim == 2 and np.array_equal(mask, np.tri(*mask.shape, dtype=bool))
        forbidden = "the mask forbids" + (" (a future position, j > i)" if causal else "")
        check_attention(got, q, k, v, mask=mask, what=name, forbidden=forbidden)

    return (
        f"{judge_each(cases, results, one, precision=True)} cases match lib.scaled_dot_product_attention with the mask"
    )


def _leak_cases(seed: int) -> list[Case]:
    lib = reference()
    gen = generator(seed, 4)
    n, d = 6, 4
    q, k, v = (normal(gen, (n, d)) for _ in range(3))
    mask = lib.causal_mask(n)
    out = [_att_case(q, k, v, mask, "causal mask")]
    for j in (5, 3, 1):
        k2, v2 = k.copy(), v.copy()
        k2[j:] = normal(gen, (n - j, d), scale=5.0)
        v2[j:] = normal(gen, (n - j, d), scale=5.0)
        out.append(_att_case(q, k2, v2, mask, f"keys and values from position {j} on changed"))
    return out


def _judge_leak(cases: list[Case], results: list[ResultRecord]) -> str:
    outputs = []

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        if not (
            isinstance(got, (tuple, list))
            and len(got) == 2
            and isinstance(got[0], np.ndarray)
            and got[0].shape == args[0].shape[:-1] + (args[2].shape[-1],)
        ):
            raise Mismatch(f"{name} must return (output, weights) with output of shape (n_q, d_v)")
        outputs.append(got[0].astype(np.float64))

    judge_each(cases, results, one)
    base = outputs[0]
    for j, changed in zip((5, 3, 1), outputs[1:]):
        earlier = np.abs(changed[:j] - base[:j])
        if not np.isfinite(earlier).all() or (earlier > 1e-9 * (1 + np.abs(base[:j]))).any():
            i = int(np.argmax(np.where(np.isfinite(earlier), earlier, np.inf).max(axis=-1)))
            raise Mismatch(
                f"changing the keys and values from position {j} on changed the output of query {i} "
                f"(by {earlier[i].max():.3g}): query {i} can see the future position(s) {j}.. even though "
                "the causal mask forbids them"
            )
    return "changing future keys and values leaves every earlier output unchanged"


A.add(
    "causal_mask",
    ["causal_mask"],
    points=2,
    cases=_mask_visible,
    judge=_judge_mask,
    description="4x4, 2x5 and 5x2 causal masks (top-left aligned, dtype bool)",
    rules=(MASK_FORM,),  # the inputs are sizes: no array to change, no input dtype to keep
)
A.add(
    "causal_mask_hidden",
    ["causal_mask"],
    points=1,
    cases=_mask_hidden,
    judge=_judge_mask,
    description="random sizes, including 1x1 and empty masks",
    rules=(MASK_FORM,),  # the inputs are sizes: no array to change, no input dtype to keep
)
A.add(
    "masked_attention",
    ["masked_attention"],
    points=2,
    cases=_att_visible,
    judge=_judge_attention,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="the example sentence with a causal mask, a float32 batch, a fully masked query",
)
A.add(
    "masked_attention_hidden",
    ["masked_attention"],
    points=3,
    cases=_att_hidden,
    judge=_judge_attention,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="random causal and arbitrary masks, broadcast over batch dimensions, float32 and float64",
)
A.add(
    "no_future_leak",
    ["masked_attention"],
    points=2,
    cases=_leak_cases,
    judge=_judge_leak,
    description="with a causal mask, changing future keys and values never changes an earlier output",
    rules=(IN_PLACE,),  # float64 inputs only: no dtype to keep
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_causal_mask = notebook_check(A, "causal_mask")
check_masked_attention = notebook_check(A, "masked_attention")
check_no_future_leak = notebook_check(A, "no_future_leak")
check_before_submit = before_submit_check(A)
