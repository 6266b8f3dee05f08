"""Inputs and diagnostics that several assignments share (numpy only).

The diagnostics turn "the numbers differ" into what a learner can act on:
which row does not sum to 1, which forbidden key gets weight, whether the
scale was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .core import RTOL, Mismatch, case_inputs, check_form, compare_arrays, notes_of, value_of

DTYPES = (np.float64, np.float32)
BATCHES = ((), (3,), (2, 2))


def generator(seed: int, salt: int) -> np.random.Generator:
    """The random generator of one check: the same for the same (seed, salt)."""
    return np.random.default_rng([int(seed) & 0x7FFFFFFF, salt])


def normal(gen: np.random.Generator, shape: Sequence[int], dtype=np.float64, scale: float = 1.0) -> np.ndarray:
    return (gen.standard_normal(tuple(shape)) * scale).astype(dtype)


def sentence_qkv() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V of the book's example sentence under the chapters' projections."""
    from .core import reference

    lib = reference()
    _, x = lib.example_sentence()
    w = lib.example_projections()
    return lib.project_qkv(x, w["w_q"], w["w_k"], w["w_v"])


def describe_inputs(**arrays: np.ndarray) -> str:
    """``"x (2, 3) float32"``-style description of a case's inputs."""
    parts = [f"{name} of shape {tuple(a.shape)}" for name, a in arrays.items()]
    dtypes = sorted({np.asarray(a).dtype.name for a in arrays.values()})
    return ", ".join(parts) + f", {'/'.join(dtypes)}"


def judge_each(cases: list[dict], results: list[dict], judge_one: Callable[..., None]) -> int:
    """Run ``judge_one(args, kwargs, value, name)`` on every case.

    The first :class:`Mismatch` is re-raised with the case's number and label
    and whatever the learner's function printed or warned.
    """
    for number, (case, record) in enumerate(zip(cases, results), 1):
        args, kwargs = case_inputs(case)
        try:
            value = value_of(record, case["call"])
            judge_one(args, kwargs, value, case["call"])
        except Mismatch as exc:
            raise Mismatch(f"Case {number} of {len(cases)} ({case['label']}): {exc}{notes_of(record)}") from None
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

    A softmax is sensitive to its logits: an error of a few units in the last
    place of a logit of size L changes the weights by about L * eps. Correct
    ways of computing it (shifting by the maximum, or subtracting a
    log-sum-exp) differ by that much, so the tolerance grows with L; a wrong
    softmax is off by far more. ``terms`` is the length of the dot products
    that made the logits.
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


def _row(idx: tuple[int, ...]) -> str:
    return str(idx[0]) if len(idx) == 1 else str(idx)


def check_weight_rows(
    got: np.ndarray,
    permitted: np.ndarray,
    *,
    what: str,
    row: str = "row",
    col: str = "entry",
    forbidden: str = "is -inf in the input",
) -> None:
    """Raise :class:`Mismatch` if rows of weights are not a proper softmax.

    ``permitted`` (broadcastable to ``got``) is True where a weight may be
    nonzero. Checks, in order: NaN or infinity, weight on a forbidden entry,
    a row with nothing permitted that is not all zeros, a row that does not
    sum to 1.
    """
    permitted = np.broadcast_to(permitted, got.shape)
    g = got.astype(np.float64)
    tol = 1e-4 if got.dtype == np.float32 else 1e-8
    anything = permitted.any(axis=-1)
    nonfinite = ~np.isfinite(g).all(axis=-1)
    if nonfinite.any():
        idx = tuple(int(i) for i in np.argwhere(nonfinite)[0])
        bad = "NaN" if np.isnan(g[idx]).any() else "an infinity"
        if not anything[idx]:
            raise Mismatch(f"{what}: {row} {_row(idx)} has nothing permitted (all -inf), so its weights must "
                           f"be all 0; got {bad}")
        raise Mismatch(f"{what}: {row} {_row(idx)} contains {bad}: exp overflowed or -inf - -inf was "
                       f"computed; subtract the {row}'s maximum before exp")
    leak = (~permitted) & (g != 0)
    if leak.any():
        idx = tuple(int(i) for i in np.argwhere(leak)[0])
        raise Mismatch(f"{what}: {row} {_row(idx[:-1])} gives weight {g[idx]:.4g} to {col} {idx[-1]}, "
                       f"which {forbidden}; it must get exactly 0")
    sums = g.sum(axis=-1)
    empty = ~anything & (sums != 0)
    if empty.any():
        idx = tuple(int(i) for i in np.argwhere(empty)[0])
        raise Mismatch(f"{what}: {row} {_row(idx)} has nothing permitted, so its weights must be all 0; "
                       f"they sum to {sums[idx]:.4g}")
    off = anything & (np.abs(sums - 1) > tol)
    if off.any():
        idx = tuple(int(i) for i in np.argwhere(off)[0])
        raise Mismatch(f"{what}: {row} {_row(idx)} sums to {sums[idx]:.6g}, not 1")


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
    weights transposed, output not ``weights @ v``) and names the one that fits.
    """
    from .core import reference

    lib = reference()
    out, w = unpack(value, names, what)
    exp_out, exp_w = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    check_form(w, exp_w, what=f"{what}, {names[1]}")
    check_form(out, exp_out, what=f"{what}, {names[0]}")
    permitted = np.ones(exp_w.shape, dtype=bool) if mask is None else np.broadcast_to(mask, exp_w.shape)
    check_weight_rows(w, permitted, what=f"{what}, {names[1]}", row="query", col="key", forbidden=forbidden)
    rtol = attention_rtol(q, k)
    try:
        compare_arrays(w, exp_w, what=f"{what}, {names[1]}", rtol=rtol)
    except Mismatch as exc:
        d_k = q.shape[-1]
        guesses = [
            ("they match softmax(Q K^T) without the scale 1/sqrt(d_k)", dict(scale=1.0)),
            ("they match softmax(Q K^T / d_k): divide by sqrt(d_k), not d_k", dict(scale=1.0 / d_k)),
        ]
        for hint, kw in guesses:
            if d_k > 1 and _close(w, lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True, **kw)[1]):
                raise Mismatch(f"{exc}. Hint: {hint}") from None
        if w.shape[-1] == w.shape[-2] and _close(np.swapaxes(w, -1, -2), exp_w):
            raise Mismatch(f"{exc}. Hint: they are transposed: row i is query i, column j is key j") from None
        raise
    try:
        compare_arrays(out, exp_out, what=f"{what}, {names[0]}", scale=_value_scale(v), rtol=rtol)
    except Mismatch as exc:
        if not _close(out, w.astype(np.float64) @ v.astype(np.float64), rtol=1e-4):
            raise Mismatch(f"{exc}. Hint: the output should be the weights times the values, weights @ v") from None
        raise


def _value_scale(v: np.ndarray) -> float:
    return max(1.0, float(np.abs(v.astype(np.float64)).max(initial=0.0)))


def _close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-4) -> bool:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True))
