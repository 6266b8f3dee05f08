"""Homework 8: the online softmax over blocks, and attention over blocks of keys.

Learner functions:

``running_max_and_sum(x, block_size)``
    for ``x`` of shape (..., n), walks along the last axis in blocks of
    ``block_size`` and returns a list with one ``(m, l)`` per block: the
    running maximum and the running sum of ``exp(x_j - m)`` over the entries
    seen so far, each of shape ``x.shape[:-1]`` (a number for 1-D ``x``).
    A prefix of only ``-inf`` has ``m = -inf`` and ``l = 0``.
``online_softmax(x, block_size)``
    the softmax along the last axis, from the final running maximum and sum;
    a row of only ``-inf`` gives zeros; float32 stays float32.
``blocked_attention(q, blocks)``
    ``q`` of shape (n_q, d_k); ``blocks`` a list of ``(k_b, v_b, allowed_b)``
    with ``k_b`` (b, d_k), ``v_b`` (b, d_v) and ``allowed_b`` (n_q, b) boolean
    (True = may attend): the keys, values and mask arrive one block at a
    time. Returns the (n_q, d_v) output of scaled dot-product attention over
    all the blocks, carrying a running maximum, sum and weighted sum of
    values per query; a query with no permitted key gets a zero output.

Expected values come from ``lib.online_softmax_steps``, ``lib.softmax`` and
``lib.scaled_dot_product_attention`` on the concatenated blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .authoring import (
    BATCHES,
    DTYPES,
    EDGE_SHARE,
    HINTS,
    attention_rtol,
    describe_inputs,
    generator,
    judge_each,
    judge_softmax_case,
    logit_rtol,
    normal,
    sentence_qkv,
    unpack,
    value_scale,
)
from .check import Assignment
from .compare import Mismatch, Partial, check_form, compare_arrays, describe, reference
from .notebook import before_submit_check, notebook_check
from .online_softmax_mistakes import attention_without_rescale, softmax_without_rescale, sums_without_rescale
from .plain import Case, ResultRecord, make_case
from .rules import DTYPE, IN_PLACE, NO_CONCATENATE

A = Assignment("hw8_online_softmax", chapter="chapters/08_online_softmax.md")

NEG = -np.inf
#: At most this many blocks per case: results travel as plain data, which
#: holds lists of up to 16 items.
MAX_BLOCKS = 16


# ------------------------------------------------------------- running maximum and sum


def _running_case(x: np.ndarray, size: int, note: str = "") -> Case:
    label = describe_inputs(x=x) + f", block_size = {size}" + (f", {note}" if note else "")
    return make_case("running_max_and_sum", x, size, label=label)


def _running_visible(seed: int) -> list[Case]:
    x = np.array([1.0, 3.0, 2.0, 5.0, 0.0])
    gen = generator(seed, 1)
    rows = normal(gen, (3, 7), np.float32, scale=3.0)
    return [
        _running_case(x, 2),
        _running_case(x, 1, "one entry per block"),
        _running_case(x, 5, "one block holds the whole row"),
        _running_case(x, 8, "block larger than the row"),
        _running_case(np.array([[4.0, 3.0, 2.0, 1.0], [-1.0, 0.0, 1.0, 2.0]]), 2, "falling and rising rows"),
        _running_case(rows, 3),
    ]


def _running_masked(seed: int) -> list[Case]:
    z = np.array([[NEG, NEG, NEG, 1.0, 2.0, NEG], [0.0, NEG, 2.0, NEG, NEG, NEG], [NEG, NEG, NEG, NEG, NEG, NEG]])
    return [
        _running_case(z, 2, "with -inf entries: a row whose first block is all -inf, a row of only -inf"),
        _running_case(z.astype(np.float32), 1, "with -inf entries"),
        _running_case(np.array([1000.0, -1000.0, 1001.0, 999.0]), 1, "logits of +-1000"),
    ]


def _rising_row(gen: np.random.Generator) -> np.ndarray:
    """A row whose maximum grows in every block: the old sum must be rescaled each time."""
    return np.sort(gen.standard_normal(int(gen.integers(8, 16))) * 3.0)


def _hidden_logits(
    gen: np.random.Generator, count: int, *, dtype_every: int, top: float, scale_first: bool, blank_row: bool
) -> list[tuple[np.ndarray, int, str]]:
    """``count`` random ``(logits, block_size, note)`` for the hidden checks of the online softmax.

    Case i has batch dimensions ``BATCHES[i % 3]``, dtype ``DTYPES[(i //
    dtype_every) % 2]``, a random length n and block size (at most
    :data:`MAX_BLOCKS` blocks) and logits of scale ``10 ** uniform(-1,
    top)``; every other case has -inf entries, and its first row starts
    with a block of only -inf (``blank_row``: is only -inf). ``scale_first``
    draws the scale before the logits: the two checks draw in these two
    orders, kept so that each learner's hidden inputs stay what they were.
    """
    out = []
    for i in range(1, count + 1):
        lead = BATCHES[i % 3]
        dtype = DTYPES[(i // dtype_every) % 2]
        n = int(gen.integers(1, 25))
        size = int(gen.integers(max(1, -(-n // MAX_BLOCKS)), n + 3))
        if scale_first:
            scale = 10.0 ** gen.uniform(-1, top)
            x = gen.standard_normal((*lead, n)) * scale
        else:
            x = gen.standard_normal((*lead, n))
            x = x * 10.0 ** gen.uniform(-1, top)
        note = ""
        if i % 2 == 1:
            x[gen.random(x.shape) < 0.4] = NEG
            x.reshape(-1, n)[0, : n if blank_row else min(n, size + 1)] = NEG
            note = "with -inf entries and a row of -inf" if blank_row else "with -inf entries"
        out.append((x.astype(dtype), size, note))
    return out


def _running_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 2)
    out = [_running_case(_rising_row(gen), int(gen.integers(1, 4)), "a row that rises from block to block")]
    logits = _hidden_logits(gen, 9, dtype_every=3, top=2.5, scale_first=True, blank_row=False)
    return out + [_running_case(x, size, note) for x, size, note in logits]


def _as_state(value: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    """A learner's m or l as a float64 array of ``shape`` (a number is fine for shape ())."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = np.float64(value)
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iuf":
        raise Mismatch(f"{what} is {describe(value)}; expected a number or an array of shape {shape}")
    if value.shape != shape:
        raise Mismatch(f"{what} has shape {value.shape}; expected {shape} (x.shape[:-1]: one value per row)")
    return value.astype(np.float64)


def _judge_running(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, size = args
        steps = lib.online_softmax_steps(x, size)
        if not isinstance(got, (list, tuple)):
            raise Mismatch(f"{name} returned {describe(got)}; expected a list with one (m, l) per block")
        if len(got) != len(steps):
            raise Mismatch(
                f"{name} returned {len(got)} states; expected {len(steps)}, one per block of "
                f"{size} entries along the last axis (n = {x.shape[-1]})"
            )
        bound = float(np.abs(x[np.isfinite(x)]).max(initial=0.0))
        rtol = logit_rtol(x.dtype, bound, terms=size)
        shape = x.shape[:-1]
        for b, (state, step) in enumerate(zip(got, steps), 1):
            where = f"{name}, state after block {b} (entries up to {step.stop - 1})"
            m, l = unpack(state, ("m", "l"), where)
            m, l = _as_state(m, shape, f"{where}, m"), _as_state(l, shape, f"{where}, l")
            compare_arrays(
                m, step.running_max.astype(np.float64), what=f"{where}, running maximum m", check_dtype=False, rtol=rtol
            )
            try:
                compare_arrays(
                    l, step.running_sum.astype(np.float64), what=f"{where}, running sum l", check_dtype=False, rtol=rtol
                )
            except Mismatch as exc:
                for direction, hint in (
                    (
                        0,
                        f"the old sum was {HINTS['not_rescaled']}: multiply it by that factor "
                        "before adding the block's terms",
                    ),
                    (-1, f"the old sum was rescaled by exp(m_new - m_old); {HINTS['rescaled_wrong_way']}"),
                ):
                    wrong = sums_without_rescale(x, size, direction)[b - 1]
                    if np.allclose(l, wrong, rtol=1e-6, equal_nan=True):
                        raise Mismatch(f"{exc}. Hint: {hint}") from None
                if np.isnan(l).any():
                    raise Mismatch(
                        f"{exc}. Hint: while every entry seen is -inf, m is -inf, and {HINTS['shift_by_zero']}"
                    ) from None
                raise

    return f"{judge_each(cases, results, one)} cases match lib.online_softmax_steps"


# ------------------------------------------------------------- the online softmax


def _softmax_case(x: np.ndarray, size: int, note: str = "") -> Case:
    label = describe_inputs(x=x) + f", block_size = {size}" + (f", {note}" if note else "")
    return make_case("online_softmax", x, size, label=label)


def _softmax_visible(seed: int) -> list[Case]:
    gen = generator(seed, 3)
    return [
        _softmax_case(np.array([1.0, 3.0, 2.0, 5.0, 0.0]), 2),
        _softmax_case(normal(gen, (2, 3, 6), np.float32, scale=5.0), 4),
        _softmax_case(np.array([[NEG, NEG, 1.0, 2.0], [NEG, NEG, NEG, NEG]]), 2, "with -inf entries and a row of -inf"),
        _softmax_case(np.array([[1e4, 0.0, 1e4 - 1.0]], dtype=np.float32), 1, "logits of 1e4"),
    ]


def _softmax_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 4)
    out = [_softmax_case(_rising_row(gen), int(gen.integers(1, 4)), "a row that rises from block to block")]
    logits = _hidden_logits(gen, 7, dtype_every=2, top=3.0, scale_first=False, blank_row=True)
    return out + [_softmax_case(x, size, note) for x, size, note in logits]


def _judge_softmax(cases: list[Case], results: list[ResultRecord]) -> str:
    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, size = args
        try:
            judge_softmax_case(got, x, what=name)
        except Partial:
            raise
        except Mismatch as exc:
            if (
                isinstance(got, np.ndarray)
                and x.shape[-1] > size
                and "Hint:" not in str(exc)
                and np.allclose(got, softmax_without_rescale(x, size), rtol=1e-4, atol=1e-7, equal_nan=True)
            ):
                raise Mismatch(
                    f"{exc}. Hint: the rows sum to less than 1 because the running sum l was "
                    f"{HINTS['not_rescaled']} (in running_max_and_sum): multiply the old sum "
                    "by that factor before adding the block's terms"
                ) from None
            raise

    return f"{judge_each(cases, results, one)} cases match lib.softmax"


# ------------------------------------------------------------- attention over blocks of keys


def _blocks(k: np.ndarray, v: np.ndarray, allowed: np.ndarray, size: int) -> list[tuple[np.ndarray, ...]]:
    return [(k[s : s + size], v[s : s + size], allowed[:, s : s + size]) for s in range(0, k.shape[0], size)]


def _attention_case(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray, size: int, note: str = ""
) -> Case:
    blocks = _blocks(k, v, allowed, size)
    label = (
        describe_inputs(q=q, k=k, v=v)
        + f", {len(blocks)} block(s) of up to {size} keys"
        + (f", {note}" if note else "")
    )
    return make_case("blocked_attention", q, blocks, label=label)


def _attention_visible(seed: int) -> list[Case]:
    lib = reference()
    q, k, v = sentence_qkv()
    gen = generator(seed, 5)
    q32, k32, v32 = (normal(gen, (4, d), np.float32, 2.0) for d in (3, 3, 2))
    some = np.array(
        [
            [False, False, True, True],
            [False, False, False, False],
            [True, False, False, False],
            [True, True, True, True],
        ]
    )
    everything = np.ones((6, 6), dtype=bool)
    return [
        _attention_case(q, k, v, everything, 2, "no mask"),
        _attention_case(q, k, v, lib.causal_mask(6), 4, "causal mask"),
        _attention_case(q32, k32, v32, some, 2, "a query whose first block is masked, a query with no key"),
    ]


def _attention_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 6)
    # First a case with several blocks and no mask, where query 0's scores rise
    # from block to block (keys along its own direction, growing).
    n_q, n_k, d_k, d_v = int(gen.integers(1, 6)), int(gen.integers(6, 12)), int(gen.integers(2, 5)), 2
    q, v = normal(gen, (n_q, d_k)), normal(gen, (n_k, d_v))
    k = np.linspace(-2.0, 2.0, n_k)[:, None] * q[0] / np.linalg.norm(q[0]) + normal(gen, (n_k, d_k), scale=0.01)
    out = [
        _attention_case(q, k, v, np.ones((n_q, n_k), dtype=bool), int(gen.integers(1, 4)), "no mask, several blocks")
    ]
    for i in range(1, 8):
        dtype = DTYPES[i % 2]
        n_q, n_k, d_k, d_v = (int(gen.integers(1, 12)) for _ in range(4))
        size = int(gen.integers(max(1, -(-n_k // MAX_BLOCKS)), n_k + 2))
        scale = 10.0 ** gen.uniform(-0.5, 0.5) if dtype == np.float32 else 10.0 ** gen.uniform(-0.5, 1.2)
        q, k = normal(gen, (n_q, d_k), dtype, scale), normal(gen, (n_k, d_k), dtype, scale)
        v = normal(gen, (n_k, d_v), dtype)
        if i % 3 == 0:
            allowed, note = np.tri(n_q, n_k, dtype=bool), "causal mask"
        else:
            allowed, note = gen.random((n_q, n_k)) < 0.6, "random mask"
            allowed[0] = False  # a query with nothing permitted
        out.append(_attention_case(q, k, v, allowed, size, note))
    return out


#: The feedback of a blocked_attention that concatenates the blocks.
CONCATENATE_RULE = (
    "blocked_attention calls np.concatenate. The point of attention over blocks is that the whole key "
    "matrix never exists at once; this check earns no points until the blocks are processed one at a "
    f"time. {NO_CONCATENATE.statement}"
)


def _judge_attention(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()
    for record in results:
        if isinstance(record, dict) and "np.concatenate" in (record.get("calls") or []):
            raise Mismatch(CONCATENATE_RULE)

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        q, blocks = args
        k = np.concatenate([b[0] for b in blocks])
        v = np.concatenate([b[1] for b in blocks])
        allowed = np.concatenate([b[2] for b in blocks], axis=1)
        expected = lib.scaled_dot_product_attention(q, k, v, allowed)
        check_form(got, expected, what=name)
        nothing = ~np.any(allowed, axis=1)
        edge = None
        bad_edge = nothing & (np.isnan(got).any(axis=1) | (got != 0).any(axis=1))
        if bad_edge.any():
            i = int(np.flatnonzero(bad_edge)[0])
            how = (
                "got NaN (divide by the sum only where it is positive)"
                if np.isnan(got[i]).any()
                else "got a nonzero output (a query with no permitted key gets none of the values)"
            )
            edge = f"{name}: query {i} may attend to no key, so its output must be 0; {how}"
            got = np.where(nothing[:, None], 0, got).astype(got.dtype)
        if np.isnan(got).any():
            raise Mismatch(
                f"{name}: the output contains NaN. Hint: while a query has seen only masked keys "
                f"its running maximum is -inf, and {HINTS['shift_by_zero']}"
            )
        try:
            compare_arrays(got, expected, what=name, scale=value_scale(v), rtol=attention_rtol(q, k))
        except Mismatch as exc:
            if len(blocks) > 1:
                last = lib.scaled_dot_product_attention(q, blocks[-1][0], blocks[-1][1], blocks[-1][2])
                if np.allclose(got, last, rtol=1e-4, atol=1e-6):
                    raise Mismatch(
                        f"{exc}. Hint: the output is {HINTS['last_block_only']}: "
                        "carry m, l and the weighted sum of values across blocks"
                    ) from None
                if np.allclose(got, attention_without_rescale(q, blocks), rtol=1e-4, atol=1e-6):
                    raise Mismatch(
                        f"{exc}. Hint: the sum and the weighted sum of values carried so far were "
                        f"{HINTS['not_rescaled']} (when a block raised a query's maximum): multiply "
                        "both by that factor before adding the new block's terms"
                    ) from None
            raise
        if edge is not None:
            raise Partial(edge, 1 - EDGE_SHARE)

    return f"{judge_each(cases, results, one)} cases match lib.scaled_dot_product_attention over all the blocks"


#: m and l are compared by value in float64, whatever their dtype (a 1-D row's may be a plain number):
#: of the default rules, only changing the input in place can cost points.
RUNNING_RULES = (IN_PLACE,)

A.add(
    "running_state",
    ["running_max_and_sum"],
    points=2,
    cases=_running_visible,
    judge=_judge_running,
    rules=RUNNING_RULES,
    description="the running maximum and sum after each block: 1-D and 2-D input, block sizes 1 to 8",
)
A.add(
    "running_state_masked",
    ["running_max_and_sum"],
    points=1,
    cases=_running_masked,
    judge=_judge_running,
    rules=RUNNING_RULES,
    description="-inf entries, a first block of only -inf, a row of only -inf, logits of 1000",
)
A.add(
    "running_state_hidden",
    ["running_max_and_sum"],
    points=2,
    cases=_running_hidden,
    judge=_judge_running,
    rules=RUNNING_RULES,
    description="random logits of scale up to 300, batch dimensions, -inf entries, float32 and float64",
)
A.add(
    "online_softmax",
    ["online_softmax"],
    points=1,
    cases=_softmax_visible,
    judge=_judge_softmax,
    description="the softmax from the running state: batch dimensions, -inf, logits of 1e4 in float32",
)
A.add(
    "online_softmax_hidden",
    ["online_softmax"],
    points=1,
    cases=_softmax_hidden,
    judge=_judge_softmax,
    description="random logits of scale up to 1000, random block sizes, -inf entries and rows, float32 and float64",
)
A.add(
    "blocked_attention",
    ["blocked_attention"],
    points=1,
    cases=_attention_visible,
    judge=_judge_attention,
    rules=(IN_PLACE, DTYPE, NO_CONCATENATE),
    description="the example sentence without and with a causal mask; a float32 case with masked blocks",
)
A.add(
    "blocked_attention_hidden",
    ["blocked_attention"],
    points=2,
    cases=_attention_hidden,
    judge=_judge_attention,
    rules=(IN_PLACE, DTYPE, NO_CONCATENATE),
    description="random sizes, block sizes and masks, queries with no permitted key, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_blocked_attention = notebook_check(A, "blocked_attention")
check_online_softmax = notebook_check(A, "online_softmax")
check_running_state = notebook_check(A, "running_state")
check_running_state_masked = notebook_check(A, "running_state_masked")
check_before_submit = before_submit_check(A)
