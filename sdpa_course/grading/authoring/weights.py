"""Rows of softmax weights judged and their usual mistakes named: NaN, weight on a forbidden entry,
rows that do not sum to 1, the softmax over the wrong axis, a row with nothing permitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compare import Mismatch, Partial, check_form, compare_arrays, reference
from .hints import HINTS
from .tolerances import logit_rtol, row_sum_tol

#: Share of a case lost when only the edge case is wrong (the rows with
#: nothing permitted: an all -inf row of logits, a fully masked query).
EDGE_SHARE = 0.5


def row_label(idx: tuple[int, ...]) -> str:
    """A row's index as the message shows it: 3, (0, 3), or 0 for the one row of a 1-D input."""
    return str(idx[0]) if len(idx) == 1 else str(idx) if idx else "0"


def _unlike_one(total: float) -> str:
    """``total`` with 6 significant digits, or as many more as it takes not to read as 1."""
    for digits in range(6, 18):
        text = f"{total:.{digits}g}"
        if float(text) != 1.0:
            return text
    return repr(total)


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
    elif n > 1 and near(vals, filled_weights(np.zeros(n), np.zeros(n, dtype=bool)), rtol=1e-3):
        how = (
            f"got {1.0 / n:.3g} for each of its {n} entries, an equal share: {HINTS['large_negative_fill']} "
            "Then a row with nothing permitted spreads its weight evenly instead of getting none; use -inf "
            "and give such a row zeros"
        )
    else:
        how = f"they sum to {np.nansum(vals):.4g}"
    fixed = np.where(empty[..., None], 0, got).astype(got.dtype)
    return fixed, (
        f"{what}: {row} {row_label(idx)} has nothing permitted ({forbidden_all}), so its weights must be all 0; {how}"
    )


def filled_weights(weights: np.ndarray, permitted: np.ndarray) -> np.ndarray:
    """The weights that a large negative fill (such as -1e9 or -1e6 in place of -inf) gives.

    A row with something permitted is unchanged (exp of the fill minus the
    row's maximum is 0); a row with nothing permitted is all fill, so it spreads
    its weight evenly, 1/n to each of its n entries, instead of getting none.
    The one model of that mistake, for every judge that names it.
    """
    w = np.asarray(weights, dtype=np.float64)
    permitted = np.broadcast_to(permitted, w.shape)
    empty = ~np.any(permitted, axis=-1, keepdims=True)
    filled: np.ndarray = np.where(empty, 1.0 / max(w.shape[-1], 1), w)
    return filled


def _nan_cause(row_logits: np.ndarray | None, row: str) -> str:
    """Why a row with something permitted holds NaN, named from its logits when they are known.

    Code that never shifts gives NaN only when exp overflows or every term underflows to 0;
    when the row's largest logit lies well inside exp's range, neither can happen, so the NaN
    comes from shifting by a maximum of -inf (one taken over only -inf entries, such as a
    block of them), which only a row with -inf entries can meet.
    """
    if row_logits is not None:
        finite = row_logits[np.isfinite(row_logits)].astype(np.float64)
        dtype = row_logits.dtype if row_logits.dtype.kind == "f" else np.dtype(np.float64)
        limit = float(np.log(np.finfo(dtype).max)) - 1.0
        top = float(finite.max(initial=-np.inf))
        if np.isneginf(row_logits).any() and -limit < top < limit:
            return (
                "its largest logit is far from where exp overflows, so the NaN comes from a shift by a "
                f"maximum of -inf (one taken over only -inf entries, such as a block of them): {HINTS['shift_by_zero']}"
            )
        if abs(top) >= limit:
            return f"exp overflowed, or every term underflowed to 0; {HINTS['shift_by_max']}"
    return (
        f"exp overflowed ({HINTS['shift_by_max'].replace('row', row)}), or a maximum of -inf was "
        "subtracted (-inf - (-inf) is NaN) or a sum of 0 divided (0 / 0 is NaN)"
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

    def shift(top: np.ndarray, guard: bool) -> np.ndarray:
        return np.where(np.isneginf(top), 0, top) if guard else top

    def soft(x: np.ndarray, axis: int, guard: bool = True) -> np.ndarray:
        top = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - shift(top, guard))
        total = e.sum(axis=axis, keepdims=True)
        weights: np.ndarray = e / np.where(total == 0, 1, total) if guard else e / total
        return weights

    candidates = []
    with np.errstate(all="ignore"):
        # each mistake as written with the -inf guard, and without it (NaN where the learner's gets NaN)
        for guard in (True, False):
            candidates.append(
                (
                    soft(z64, -2, guard),
                    f"they match the softmax along axis -2 (each column sums to 1): {HINTS['softmax_wrong_axis']}; "
                    "use axis=-1 (each row sums to 1)",
                )
            )
            if z.shape[-1] == z.shape[-2]:
                e = np.exp(z64 - shift(np.max(z64, axis=-1, keepdims=True), guard))
                candidates.append(
                    (
                        e / e.sum(axis=-1)[..., None, :],
                        f"they match e / e.sum(axis=-1) without keepdims=True: {HINTS['sum_without_keepdims']} "
                        "(entry (i, j) divided by row j's sum); "
                        "write e.sum(axis=-1, keepdims=True)",
                    )
                )
                e = np.exp(z64 - shift(np.max(z64, axis=-1), guard)[..., None, :])
                candidates.append(
                    (
                        e / e.sum(axis=-1, keepdims=True),
                        "they match subtracting np.max(z, axis=-1) without keepdims=True: "
                        f"{HINTS['max_without_keepdims']}; write np.max(z, axis=-1, keepdims=True)",
                    )
                )
    # the rows with nothing permitted are judged on their own (edge_rows): compare the others
    empty = np.isneginf(z64).all(axis=-1, keepdims=True)
    rest = np.where(empty, 0, got.astype(np.float64))
    for cand, hint in candidates:
        if near(rest, np.where(empty, 0, cand), rtol=1e-4) and not near(rest, soft(z64, -1), rtol=1e-4):
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
    logits: np.ndarray | None = None,
) -> None:
    """Raise :class:`Mismatch` if rows of weights are not a proper softmax.

    ``permitted`` (broadcastable to ``got``) is True where a weight may be
    nonzero. Checks, in order: NaN or infinity, weight on a forbidden entry,
    a row with nothing permitted that is not all zeros, a row that does not
    sum to 1 within :func:`row_sum_tol` (``rtol`` is the tolerance of the
    weights themselves). ``d_k``, when given, lets the message recognise
    weights scaled after the softmax (rows summing to 1/sqrt(d_k)). ``logits``, when
    given (the softmax's own input, with -inf where nothing is permitted), lets the
    message of a NaN name its cause (:func:`_nan_cause`).
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
                f"{what}: {row} {row_label(idx)} has nothing permitted (all -inf), "
                f"so its weights must be all 0; got {bad}"
            )
        row_logits = None if logits is None else np.broadcast_to(logits, got.shape)[idx]
        raise Mismatch(f"{what}: {row} {row_label(idx)} contains {bad}: {_nan_cause(row_logits, row)}")
    leak = (~permitted) & (g != 0)
    if leak.any():
        idx = tuple(int(i) for i in np.argwhere(leak)[0])
        raise Mismatch(
            f"{what}: {row} {row_label(idx[:-1])} gives weight {g[idx]:.4g} to {col} {idx[-1]}, "
            f"which {forbidden}; it must get exactly 0"
        )
    sums = g.sum(axis=-1)
    empty = ~anything & (sums != 0)
    if empty.any():
        idx = tuple(int(i) for i in np.argwhere(empty)[0])
        raise Mismatch(
            f"{what}: {row} {row_label(idx)} has nothing permitted, so its weights must be all 0; "
            f"they sum to {sums[idx]:.4g}"
        )
    off = anything & (np.abs(sums - 1) > tol)
    if off.any():
        idx = tuple(int(i) for i in np.argwhere(off)[0])
        message = f"{what}: {row} {row_label(idx)} sums to {_unlike_one(float(sums[idx]))}, not 1"
        live = sums[anything]
        if d_k is not None and d_k > 1:
            for factor, how in (
                (1 / np.sqrt(d_k), f"1/sqrt(d_k) = {1 / np.sqrt(d_k):.4g}"),
                (1 / d_k, f"1/d_k = {1 / d_k:.4g}"),
            ):
                if np.allclose(live, factor, rtol=1e-4):
                    raise Mismatch(
                        f"{message}. Hint: every {row} sums to {how}: {HINTS['scaled_after_softmax']}; "
                        "divide the scores by sqrt(d_k) before the softmax, so that "
                        "each row of weights still sums to 1"
                    )
        if got.ndim >= 2 and got.shape[-2] > 1:
            cols = g.sum(axis=-2)
            if np.allclose(cols, 1, atol=max(tol, 1e-6)):
                raise Mismatch(
                    f"{message}. Hint: the columns sum to 1 (along axis -2), so {HINTS['softmax_wrong_axis']}; "
                    f"each {row} must sum to 1: use axis=-1"
                )
        raise Mismatch(message)


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
        check_weight_rows(got, permitted, what=what, rtol=rtol, logits=z)
        compare_arrays(got, expected, what=what, rtol=rtol)
    except Mismatch as exc:
        hint = softmax_hint(got, z) if "Hint:" not in str(exc) else None
        if hint:
            raise Mismatch(f"{exc}. Hint: {hint}") from None
        raise
    if edge is not None:
        raise Partial(edge, 1 - EDGE_SHARE)


def near(a: Any, b: Any, rtol: float = 1e-4) -> bool:
    """Does ``a`` match ``b`` loosely (same shape, within ``rtol``)? Used to name a mistake, never to score."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True))
