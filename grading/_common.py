"""Inputs and diagnostics that several assignments share (numpy only).

The diagnostics turn "the numbers differ" into what a learner can act on:
which row does not sum to 1, which forbidden key gets weight, whether the
scale was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .compare import RTOL, Mismatch, Partial, check_form, compare_arrays, notes_of, reference, value_of
from .plain import case_inputs
from .rules import DTYPE, DTYPE_SHARE, IN_PLACE, MUTATION_SHARE

DTYPES = (np.float64, np.float32)
BATCHES = ((), (3,), (2, 2))


def generator(seed: int, salt: int) -> np.random.Generator:
    """The random generator of one check: the same for the same (seed, salt)."""
    return np.random.default_rng([int(seed) & 0x7FFFFFFF, salt])


def normal(gen: np.random.Generator, shape: Sequence[int], dtype=np.float64, scale: float = 1.0) -> np.ndarray:
    return (gen.standard_normal(tuple(shape)) * scale).astype(dtype)


def sentence_qkv() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V of the book's example sentence under the chapters' projections."""
    lib = reference()
    _, x = lib.example_sentence()
    w = lib.example_projections()
    return lib.project_qkv(x, w["w_q"], w["w_k"], w["w_v"])


def judge_softmax_case(got: Any, z: np.ndarray, *, what: str, terms: int = 1) -> None:
    """Judge one softmax over the last axis of logits ``z`` (homework 2 and 8).

    The tolerance is :func:`logit_rtol` of the largest finite |logit|; the
    rows with nothing permitted (all -inf) are their own share
    (:func:`edge_rows`); a wrong value gets the hint of :func:`softmax_hint`.
    """
    lib = reference()
    expected = lib.softmax(z, axis=-1)
    check_form(got, expected, what=what)
    permitted = ~np.isneginf(z)
    got, edge = edge_rows(got, permitted, what=what)
    bound = float(np.abs(z[np.isfinite(z)]).max(initial=0.0))
    rtol = logit_rtol(z.dtype, bound, terms=terms)
    try:
        check_weight_rows(got, permitted, what=what, rtol=rtol)
        compare_arrays(got, expected, what=what, rtol=rtol)
    except Mismatch as exc:
        hint = softmax_hint(got, z) if "Hint:" not in str(exc) else None
        if hint:
            raise Mismatch(f"{exc}. Hint: {hint}") from None
        raise
    if edge is not None:
        raise Partial(edge, 1 - EDGE_SHARE)


def describe_inputs(**arrays: np.ndarray) -> str:
    """``"x (2, 3) float32"``-style description of a case's inputs."""
    parts = [f"{name} of shape {tuple(a.shape)}" for name, a in arrays.items()]
    dtypes = sorted({np.asarray(a).dtype.name for a in arrays.values()})
    return ", ".join(parts) + f", {'/'.join(dtypes)}"


#: Share of a case lost when only the edge case is wrong (the rows with
#: nothing permitted: an all -inf row of logits, a fully masked query).
EDGE_SHARE = 0.5


def _float_dtype(args: Sequence, kwargs: dict) -> np.dtype | None:
    """The float dtype the result must have: that of the float array inputs."""
    found = []

    def walk(v, depth=0):
        if isinstance(v, np.ndarray) and v.dtype.kind == "f":
            found.append(v.dtype)
        elif isinstance(v, (tuple, list)) and depth < 3:
            for item in v:
                walk(item, depth + 1)

    for v in list(args) + list(kwargs.values()):
        walk(v)
    return np.result_type(*found) if found else None


def _cast_floats(value: Any, dtype: np.dtype) -> tuple[Any, bool]:
    """``value`` with every float array of another float dtype cast to ``dtype``; and whether any was."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.dtype != dtype:
        return value.astype(dtype), True
    if isinstance(value, (tuple, list)):
        items = [_cast_floats(v, dtype) for v in value]
        return type(value)(v for v, _ in items), any(c for _, c in items)
    return value, False


def judge_each(cases: list[dict], results: list[dict], judge_one: Callable[..., None]) -> int:
    """Run ``judge_one(args, kwargs, value, name)`` on every case; return the number of cases.

    Points follow the size of the mistake: each case is worth the same share
    of the check, and a case earns

    - all of its share when ``judge_one`` returns;
    - ``DTYPE_SHARE`` of it when the values are right but a float result has
      the wrong dtype (``judge_one`` passes on the result cast to the input's
      dtype);
    - what a :class:`~grading.compare.Partial` raised by ``judge_one`` says
      (e.g. only the fully masked rows wrong);
    - 0 on a :class:`Mismatch`;

    minus ``MUTATION_SHARE`` when the function changed an input in place.
    When not every case earns its whole share, a :class:`Partial` (or a
    :class:`Mismatch` when nothing is earned) is raised with the first
    failing case's message, its number and label, whatever the learner's
    function printed or warned, and how many cases were right.
    """
    earned = 0.0
    full = 0
    first: str | None = None
    for number, (case, record) in enumerate(zip(cases, results), 1):
        args, kwargs = case_inputs(case)
        share, problem = 1.0, None
        try:
            value = value_of(record, case["call"])
            try:
                judge_one(args, kwargs, value, case["call"])
            except Mismatch as exc:
                share, problem = getattr(exc, "fraction", 0.0), str(exc)
                dtype = _float_dtype(args, kwargs)
                cast, changed = _cast_floats(value, dtype) if dtype is not None else (value, False)
                if changed and share < DTYPE_SHARE:
                    try:
                        judge_one(*case_inputs(case), cast, case["call"])
                    except Mismatch:
                        pass
                    else:
                        share = DTYPE_SHARE
                        problem = f"{problem}. Every value is right: only the dtype is wrong. {DTYPE.statement}"
        except Mismatch as exc:
            share, problem = getattr(exc, "fraction", 0.0), str(exc)
        mutated = record.get("mutated") if isinstance(record, dict) else None
        if mutated and share > 0:
            share = max(0.0, share - MUTATION_SHARE)
            what = ", ".join(map(str, mutated[:3]))
            problem = ((problem + "; also, ") if problem else "") + (
                f"{case['call']} changed its input ({what}) in place. {IN_PLACE.statement}"
            )
        earned += share
        full += problem is None
        if problem is not None and first is None:
            first = f"Case {number} of {len(cases)} ({case['label']}): {problem}{notes_of(record)}"
    if first is not None:
        fraction = earned / max(1, len(cases))
        summary = f" ({full} of {len(cases)} cases fully right)"
        if fraction <= 0:
            raise Mismatch(first + summary)
        raise Partial(first + summary, fraction)
    return len(cases)


def unpack(value: Any, names: Sequence[str], what: str) -> tuple:
    """A returned tuple of ``len(names)`` items, or :class:`Mismatch`."""
    wanted = "(" + ", ".join(names) + ")"
    if not isinstance(value, (tuple, list)):
        kind = "an array" if isinstance(value, np.ndarray) else f"a {type(value).__name__}"
        raise Mismatch(f"{what} returned {kind}; expected a tuple {wanted}")
    if len(value) != len(names):
        raise Mismatch(f"{what} returned {len(value)} items; expected {len(names)}: {wanted}")
    return tuple(value)


def logit_rtol(dtype: np.dtype, logit_bound: float, terms: int = 1) -> float:
    """Relative tolerance for weights computed from logits as large as ``logit_bound``.

    Derivation (u = eps / 2 is the unit roundoff of the dtype, B the largest
    |logit|, t the length of the dot products that made the logits). Every
    sound way of computing a softmax (shift by the row maximum, subtract a
    log-sum-exp, work in float64 and round at the end, loop or einsum) makes
    each weight ``exp(z_j - c) / S`` with

    - the logits themselves rounded by up to ``t u B`` (a dot product of t
      terms, in another order than lib's);
    - ``z_j - c`` rounded by up to ``u (|z_j| + |c|) <= 2 u B`` (``c`` is the
      maximum or the log-sum-exp, itself of size up to B + log n and rounded
      by ``u B``);
    - ``exp`` adding a relative error of that size plus ``u``; the sum S and
      the division another ``n u`` and ``u`` (``n u`` is covered by the row-sum
      tolerance of :func:`check_weight_rows`).

    So a weight is off by at most about ``(3 + t) u B + 3 u`` relative, i.e.
    ``2 eps (1 + B)(1 + t)``; the tolerance takes twice that,
    ``4 eps (1 + B)(1 + t)``, on top of the dtype's base tolerance
    (:data:`~grading.compare.RTOL`). A wrong softmax (wrong axis, no scale,
    mask after the softmax) is off by far more. It does not depend on lib's
    own rounding: lib is one of the sound methods, off by the same bound.
    """
    dtype = np.dtype(dtype)
    eps = float(np.finfo(dtype).eps) if dtype.kind == "f" else float(np.finfo(np.float64).eps)
    return RTOL.get(dtype.name, RTOL["float64"]) + 4 * eps * (1.0 + logit_bound) * (1 + terms)


def attention_rtol(q: np.ndarray, k: np.ndarray, scale: float | None = None) -> float:
    """:func:`logit_rtol` for the scores ``q . k * scale`` (bounded by Cauchy-Schwarz)."""
    d_k = q.shape[-1]
    scale = 1.0 / np.sqrt(d_k) if scale is None else scale
    qn = float(np.linalg.norm(q.astype(np.float64), axis=-1).max(initial=0.0))
    kn = float(np.linalg.norm(k.astype(np.float64), axis=-1).max(initial=0.0))
    return logit_rtol(np.result_type(q, k), scale * qn * kn, terms=d_k)


def row_sum_tol(dtype: np.dtype, rtol: float | None, n: int) -> float:
    """How far from 1 the sum of a row of n weights may be.

    Each weight is within ``rtol`` (relative) of the exact one, so their sum
    is within ``rtol`` of 1; adding n numbers in floating point adds up to
    ``n eps`` more (any order of summation). Hence ``rtol + n eps``: the
    same bound as the weights, never a fixed number (a fixed 1e-4 would fail a
    correct ``exp(z - logsumexp(z))`` in float32 at logits of 1e4, whose rows
    sum to 1 +- 3e-4).
    """
    dtype = np.dtype(dtype)
    eps = float(np.finfo(dtype).eps) if dtype.kind == "f" else float(np.finfo(np.float64).eps)
    base = RTOL.get(dtype.name, RTOL["float64"]) if rtol is None else rtol
    return base + (n + 2) * eps


def _row(idx: tuple[int, ...]) -> str:
    return str(idx[0]) if len(idx) == 1 else str(idx)


def edge_rows(
    got: Any, permitted: np.ndarray, *, what: str, row: str = "row", forbidden_all: str = "all -inf"
) -> tuple[Any, str | None]:
    """Set aside the edge case: the rows with nothing permitted.

    Returns ``(got with those rows set to 0, message)`` when only they may be
    wrong (``message`` is None when they are right, or when ``got`` is not an
    array of the right shape). The judge then checks the other rows as usual
    and, if they are right, raises ``Partial(message, 1 - EDGE_SHARE)``: the
    edge case is its own share of the case.
    """
    if not isinstance(got, np.ndarray) or got.dtype.kind != "f" or got.ndim == 0:
        return got, None
    try:
        permitted = np.broadcast_to(permitted, got.shape)
    except ValueError:
        return got, None
    empty = ~np.any(permitted, axis=-1)
    g = got.astype(np.float64)
    bad = empty & (~np.isfinite(g).all(axis=-1) | (g != 0).any(axis=-1))
    if not bad.any():
        return got, None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    vals = g[idx]
    n = vals.shape[-1]
    if np.isnan(vals).any():
        how = (
            "got NaN: every entry is -inf, so shifting by the maximum computes -inf - (-inf) = NaN, "
            "or the sum is 0 and 0 / 0 = NaN; shift such a row by 0 and divide only where the sum is positive"
        )
    elif n > 1 and np.allclose(vals, 1.0 / n, rtol=1e-3):
        how = (
            f"got {1.0 / n:.3g} for each of its {n} entries, an equal share: did you use a large negative "
            "number (such as -1e9) instead of -inf? Then a row with nothing permitted spreads its weight "
            "evenly instead of getting none; use -inf and give such a row zeros"
        )
    else:
        how = f"they sum to {np.nansum(vals):.4g}"
    fixed = np.where(empty[..., None], 0, got).astype(got.dtype)
    return fixed, (
        f"{what}: {row} {_row(idx)} has nothing permitted ({forbidden_all}), so its weights must be all 0; {how}"
    )


def softmax_hint(got: Any, z: np.ndarray) -> str | None:
    """Name a usual softmax mistake that ``got`` matches, given the logits ``z``.

    The softmax over the wrong axis, a sum without ``keepdims=True`` (which
    divides entry (i, j) by row j's sum when the matrix is square), a maximum
    without ``keepdims=True`` (which subtracts row j's maximum from column j:
    no longer the same softmax).
    """
    if not isinstance(got, np.ndarray) or got.shape != z.shape or z.ndim < 2:
        return None
    z64 = z.astype(np.float64)
    with np.errstate(all="ignore"):

        def soft(x, axis):
            top = np.max(x, axis=axis, keepdims=True)
            e = np.exp(x - np.where(np.isneginf(top), 0, top))
            total = e.sum(axis=axis, keepdims=True)
            return e / np.where(total == 0, 1, total)

        candidates = [
            (
                soft(z64, -2),
                "they match the softmax along axis -2 (each column sums to 1): the softmax "
                "was taken over the wrong axis; use axis=-1 (each row sums to 1)",
            )
        ]
        if z.shape[-1] == z.shape[-2]:
            top = np.max(z64, axis=-1, keepdims=True)
            e = np.exp(z64 - np.where(np.isneginf(top), 0, top))
            candidates.append(
                (
                    e / e.sum(axis=-1)[..., None, :],
                    "they match e / e.sum(axis=-1) without keepdims=True: the row sums were "
                    "broadcast along the wrong axis (entry (i, j) divided by row j's sum); "
                    "write e.sum(axis=-1, keepdims=True)",
                )
            )
            m = np.max(z64, axis=-1)
            e = np.exp(z64 - np.where(np.isneginf(m), 0, m)[..., None, :])
            candidates.append(
                (
                    e / e.sum(axis=-1, keepdims=True),
                    "they match subtracting np.max(z, axis=-1) without keepdims=True: row j's "
                    "maximum was subtracted from column j; write np.max(z, axis=-1, keepdims=True)",
                )
            )
    for cand, hint in candidates:
        if near(got, cand, rtol=1e-4) and not near(got, soft(z64, -1), rtol=1e-4):
            return hint
    return None


def check_weight_rows(
    got: np.ndarray,
    permitted: np.ndarray,
    *,
    what: str,
    row: str = "row",
    col: str = "entry",
    forbidden: str = "is -inf in the input",
    rtol: float | None = None,
    d_k: int | None = None,
) -> None:
    """Raise :class:`Mismatch` if rows of weights are not a proper softmax.

    ``permitted`` (broadcastable to ``got``) is True where a weight may be
    nonzero. Checks, in order: NaN or infinity, weight on a forbidden entry,
    a row with nothing permitted that is not all zeros, a row that does not
    sum to 1 within :func:`row_sum_tol` (``rtol`` is the tolerance of the
    weights themselves). ``d_k``, when given, lets the message recognise
    weights scaled after the softmax (rows summing to 1/sqrt(d_k)).
    """
    permitted = np.broadcast_to(permitted, got.shape)
    g = got.astype(np.float64)
    tol = row_sum_tol(got.dtype, rtol, got.shape[-1] if got.ndim else 1)
    anything = np.any(permitted, axis=-1)
    nonfinite = ~np.isfinite(g).all(axis=-1)
    if nonfinite.any():
        idx = tuple(int(i) for i in np.argwhere(nonfinite)[0])
        bad = "NaN" if np.isnan(g[idx]).any() else "an infinity"
        if not anything[idx]:
            raise Mismatch(
                f"{what}: {row} {_row(idx)} has nothing permitted (all -inf), so its weights must be all 0; got {bad}"
            )
        raise Mismatch(
            f"{what}: {row} {_row(idx)} contains {bad}: exp overflowed or -inf - -inf was "
            f"computed; subtract the {row}'s maximum before exp"
        )
    leak = (~permitted) & (g != 0)
    if leak.any():
        idx = tuple(int(i) for i in np.argwhere(leak)[0])
        raise Mismatch(
            f"{what}: {row} {_row(idx[:-1])} gives weight {g[idx]:.4g} to {col} {idx[-1]}, "
            f"which {forbidden}; it must get exactly 0"
        )
    sums = g.sum(axis=-1)
    empty = ~anything & (sums != 0)
    if empty.any():
        idx = tuple(int(i) for i in np.argwhere(empty)[0])
        raise Mismatch(
            f"{what}: {row} {_row(idx)} has nothing permitted, so its weights must be all 0; "
            f"they sum to {sums[idx]:.4g}"
        )
    off = anything & (np.abs(sums - 1) > tol)
    if off.any():
        idx = tuple(int(i) for i in np.argwhere(off)[0])
        message = f"{what}: {row} {_row(idx)} sums to {sums[idx]:.6g}, not 1"
        live = sums[anything]
        if d_k is not None and d_k > 1:
            for factor, how in (
                (1 / np.sqrt(d_k), f"1/sqrt(d_k) = {1 / np.sqrt(d_k):.4g}"),
                (1 / d_k, f"1/d_k = {1 / d_k:.4g}"),
            ):
                if np.allclose(live, factor, rtol=1e-4):
                    raise Mismatch(
                        f"{message}. Hint: every {row} sums to {how}: the weights were scaled after "
                        "the softmax; divide the scores by sqrt(d_k) before the softmax, so that "
                        "each row of weights still sums to 1"
                    )
        if got.ndim >= 2 and got.shape[-2] > 1:
            cols = g.sum(axis=-2)
            if np.allclose(cols, 1, atol=max(tol, 1e-6)):
                raise Mismatch(
                    f"{message}. Hint: the columns sum to 1 (along axis -2): did you take the "
                    f"softmax over the wrong axis? Each {row} must sum to 1: use axis=-1"
                )
        raise Mismatch(message)


def check_attention(
    value: Any,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    what: str,
    mask: np.ndarray | None = None,
    forbidden: str = "the mask forbids",
    names: tuple[str, str] = ("output", "weights"),
) -> None:
    """Judge an ``(output, weights)`` pair against ``lib.scaled_dot_product_attention``.

    On a wrong value it tries the usual mistakes (no scale, dividing by d_k,
    scaling or masking after the softmax, the softmax over the wrong axis or
    without keepdims, weights transposed, output not ``weights @ v``) and
    names the one that fits. A fully masked query that is the only thing
    wrong costs half the case (:func:`edge_rows`).
    """
    lib = reference()
    out, w = unpack(value, names, what)
    exp_out, exp_w = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    check_form(w, exp_w, what=f"{what}, {names[1]}")
    check_form(out, exp_out, what=f"{what}, {names[0]}")
    permitted = np.ones(exp_w.shape, dtype=bool) if mask is None else np.broadcast_to(mask, exp_w.shape)
    w, edge = edge_rows(w, permitted, what=f"{what}, {names[1]}", row="query", forbidden_all="a fully masked query")
    if edge is not None:
        empty = ~np.any(permitted, axis=-1)
        out = np.where(empty[..., None], 0, out).astype(out.dtype)
    d_k = q.shape[-1]
    rtol = attention_rtol(q, k)
    scores = (q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)) / np.sqrt(d_k)
    logits = np.where(permitted, scores, -np.inf)
    try:
        check_weight_rows(
            w, permitted, what=f"{what}, {names[1]}", row="query", col="key", forbidden=forbidden, rtol=rtol, d_k=d_k
        )
        compare_arrays(w, exp_w, what=f"{what}, {names[1]}", rtol=rtol)
    except Mismatch as exc:
        guesses = [
            ("they match softmax(Q K^T) without the scale 1/sqrt(d_k)", dict(scale=1.0)),
            ("they match softmax(Q K^T / d_k): divide by sqrt(d_k), not d_k", dict(scale=1.0 / d_k)),
        ]
        for hint, kw in guesses:
            if d_k > 1 and near(w, lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True, **kw)[1]):
                raise Mismatch(f"{exc}. Hint: {hint}") from None
        if "Hint:" in str(exc):
            raise
        if mask is not None:
            unmasked = lib.softmax(scores, axis=-1)
            if near(w, unmasked * permitted):
                raise Mismatch(
                    f"{exc}. Hint: the weights are the unmasked softmax with the forbidden keys set "
                    "to 0 afterwards, so the rest no longer sum to 1: the mask was applied after "
                    "the softmax; set the forbidden scores to -inf before it"
                ) from None
        named = softmax_hint(w, logits)
        if named:
            raise Mismatch(f"{exc}. Hint: {named}") from None
        if w.shape[-1] == w.shape[-2] and near(np.swapaxes(w, -1, -2), exp_w):
            raise Mismatch(f"{exc}. Hint: they are transposed: row i is query i, column j is key j") from None
        raise
    try:
        compare_arrays(out, exp_out, what=f"{what}, {names[0]}", scale=value_scale(v), rtol=rtol)
    except Mismatch as exc:
        if not near(out, w.astype(np.float64) @ v.astype(np.float64), rtol=1e-4):
            raise Mismatch(f"{exc}. Hint: the output should be the weights times the values, weights @ v") from None
        raise
    if edge is not None:
        raise Partial(edge, 1 - EDGE_SHARE)


def value_scale(v: np.ndarray) -> float:
    """The size of the values ``v`` that an attention output averages: ``max(1, max |v|)``
    (the ``scale`` of :func:`~grading.compare.compare_arrays` for an output)."""
    return max(1.0, float(np.abs(v.astype(np.float64)).max(initial=0.0)))


def near(a: Any, b: Any, rtol: float = 1e-4) -> bool:
    """Does ``a`` match ``b`` loosely (same shape, within ``rtol``)? Used to name a mistake, never to score."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True))
