"""Piece (3) of a check: comparing the learner's results with the reference.

Everything here runs in the grader's process and reads only plain data
(:mod:`grading.plain`): it trusts nothing in a result record beyond plain
numbers. :func:`decide` turns a check's cases and results into a
:class:`Verdict`; a judge raises :class:`Mismatch` (nothing earned) or
:class:`Partial` (part earned), with a message in the learner's terms, and
uses :func:`compare_arrays` and :func:`check_form` to say what is wrong.
Expected values come from ``lib``, imported only here (:func:`reference`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from .plain import Case, ResultRecord, Unsupported, bounded, decode, well_formed
from .rules import OWN_CODE

__all__ = [
    "NARROWER",
    "RTOL",
    "Judge",
    "Mismatch",
    "Partial",
    "Verdict",
    "check_form",
    "coarser_precision",
    "compare_arrays",
    "decide",
    "describe",
    "matches",
    "notes_of",
    "quantize",
    "reference",
    "score_of",
    "value_of",
]


class Mismatch(Exception):
    """Raised by a comparison when a case fails; its text is the learner's message.

    ``fraction`` is the share of the case (or, raised by a judge, of the whole
    check) that is still earned: 0 for a plain mismatch.
    """

    fraction: float = 0.0


class Partial(Mismatch):
    """A case (or check) that is partly right: ``Partial(message, fraction)``.

    Used for a mistake that leaves most of the work right (the dtype of an
    otherwise right result, only the fully masked rows wrong, an input
    changed in place), so that the points follow the size of the mistake.
    """

    def __init__(self, message: str, fraction: float) -> None:
        super().__init__(message)
        self.fraction = min(max(float(fraction), 0.0), 1.0)


#: Decides a check from its cases and well-formed results (see :func:`decide`): returns a
#: one-line summary of what passed, or raises :class:`Mismatch`.
Judge = Callable[[list[Case], list[ResultRecord]], str]


@dataclass(frozen=True)
class Verdict:
    """What a comparison decided: ``fraction`` of the check's points earned.

    ``passed`` is True only for full marks; a partly right check has
    ``0 < fraction < 1`` and a message saying what is wrong. The class grader
    keeps the same type for each check it scores (:mod:`classgrader.stages.scoring`)."""

    passed: bool
    fraction: float
    message: str


def quantize(fraction: float, points: float) -> float:
    """A fraction of ``points`` that gives a score in hundredths of a point
    (so the notebook, nbgrader and the class grader store the same number)."""
    fraction = min(max(float(fraction), 0.0), 1.0)
    if points <= 0:
        return fraction
    return round(round(points * fraction, 2) / points, 12)


def score_of(points: float, fraction: float) -> float:
    """``points * fraction`` rounded to hundredths of a point."""
    return round(float(points) * min(max(float(fraction), 0.0), 1.0), 2)


#: Relative tolerance by the dtype the learner must return.
RTOL = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-2}
#: The next narrower float type of each dtype, and about how many significant digits it keeps:
#: a result that matches only to the narrower type's precision has something computed in it.
NARROWER = {"float64": ("float32", 7), "float32": ("float16", 3)}

#: Within :func:`coarser_precision`, the relative tolerance is this many machine epsilons of the
#: narrower type (about 1.2e-6 for float32): its last digit or so, and no mistake larger.
COARSER_EPS = 10

_COARSER: ContextVar[bool] = ContextVar("coarser_precision", default=False)


@contextmanager
def coarser_precision() -> Iterator[None]:
    """Within this block :func:`compare_arrays` allows the rounding of the next narrower
    type (:data:`NARROWER`): a relative tolerance of at least :data:`COARSER_EPS` of its
    machine epsilons, so that a result computed partly in float32 passes and a real
    mistake does not."""
    token = _COARSER.set(True)
    try:
        yield
    finally:
        _COARSER.reset(token)


def value_of(record: object, what: str) -> Any:
    """The decoded value of one result record, or :class:`Mismatch` if it raised."""
    if not isinstance(record, Mapping):
        raise Mismatch(f"{what}: no result came back")
    if record.get("error"):
        error = str(record["error"])
        hint = ""
        from .authoring.hints import HINTS  # here, not above: the authoring package imports this module

        if "could not be broadcast" in error and "remapped shapes" in error:
            # numpy's matmul names "remapped shapes" when the batch axes of its operands do not line up
            hint = (
                ". Hint: a matrix product met batch axes that do not line up; did you transpose with x.T? "
                f"{HINTS['transpose_all_axes']}, the batch axes too: use np.swapaxes(x, -1, -2) to swap the last two"
            )
        elif "could not be broadcast" in error:
            hint = (
                f". Hint: arrays of different shapes met; {HINTS['keepdims_left_out']} in a np.max or "
                "np.sum over the last axis, so that the result cannot line up with the rows?"
            )
        raise Mismatch(f"{what} raised {error}{hint}")
    try:
        return decode(record.get("value"))
    except Exception:  # results are untrusted data: anything malformed is the learner's loss
        raise Mismatch(f"{what}: its result could not be read") from None


def describe(value: Any) -> str:
    """A short description of a value that is not what was expected."""
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, Unsupported):
        return str(value)
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, np.generic):
        return f"a numpy {value.dtype} scalar"
    return f"a {type(value).__name__} ({value!r})"


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat_index, shape))


#: Differences within this share of the largest tie: a message shows three digits,
#: so the learner cannot tell them apart (and rounding may order them either way).
TIE = 1e-3


def largest_difference(diff: np.ndarray, among: np.ndarray | None = None) -> tuple[int, ...]:
    """Where the largest of the (finite, non-negative) differences ``diff`` is, among the
    entries ``among`` marks (every entry by default): of the entries that tie with it
    (:data:`TIE`), the first in row-major order.

    The check's message (:func:`compare_arrays`) and the picture of the weights
    (``grading.pictures``) both name the place this gives.

    >>> largest_difference(np.array([[0.1, 0.3], [0.30001, 0.2]]))
    (0, 1)
    """
    d = np.where(among, diff, -1.0) if among is not None else np.asarray(diff, dtype=np.float64)
    top = float(d.max())
    return _index(int(np.flatnonzero(d >= top * (1 - TIE))[0]), d.shape)


def check_form(got: Any, expected: np.ndarray, *, what: str, check_dtype: bool = True) -> None:
    """Raise :class:`Mismatch` unless ``got`` is an array of the expected shape (and dtype)."""
    if not isinstance(got, np.ndarray):
        raise Mismatch(f"{what} returned {describe(got)}; expected a numpy array of shape {expected.shape}")
    if got.shape != expected.shape:
        raise Mismatch(f"{what} returned shape {got.shape}; expected shape {expected.shape}")
    if check_dtype and got.dtype != expected.dtype:
        hint = ""
        if expected.dtype == np.float32:
            hint = " (float32 input must give float32 output: keep the input's dtype, e.g. dtype=x.dtype)"
        raise Mismatch(f"{what} returned dtype {got.dtype}; expected {expected.dtype}{hint}")


def compare_arrays(
    got: Any,
    expected: np.ndarray,
    *,
    what: str,
    scale: float | np.ndarray | None = None,
    rtol: float | None = None,
    check_dtype: bool = True,
) -> None:
    """Raise :class:`Mismatch` unless ``got`` is an array matching ``expected``.

    Tells the learner what is wrong, in this order: not an array, wrong shape
    (both shapes), wrong dtype, NaN or infinity where a finite value is
    expected, and else the largest difference, where it is, and the two values.
    Values match when ``|got - expected| <= rtol * (|expected| + scale)``, with
    ``rtol`` from :data:`RTOL` for the expected dtype and ``scale`` (the size
    of the numbers that went into each entry; one number, or an array that broadcasts
    against ``expected`` for a bound entry by entry) defaulting to ``max(1, max|expected|)``.
    """
    expected = np.asarray(expected)
    check_form(got, expected, what=what, check_dtype=check_dtype)
    if expected.dtype == np.bool_ or got.dtype == np.bool_:
        wrong = got != expected
        if wrong.any():
            idx = _index(int(np.flatnonzero(wrong)[0]), got.shape)
            raise Mismatch(
                f"{what}: entry {idx} is {got[idx]!s}; expected {expected[idx]!s} "
                f"({int(wrong.sum())} of {got.size} entries differ)"
            )
        return
    if got.size == 0:
        return
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    name = expected.dtype.name if expected.dtype.kind == "f" else "float64"
    tol = RTOL.get(name, 1e-10) if rtol is None else rtol
    if _COARSER.get() and name in NARROWER:
        tol = max(tol, COARSER_EPS * float(np.finfo(NARROWER[name][0]).eps))
    finite_e = np.isfinite(e)
    bad = np.isfinite(g) != finite_e
    bad |= ~finite_e & (g != e) & ~(np.isnan(g) & np.isnan(e))
    if bad.any():
        idx = _index(int(np.flatnonzero(bad)[0]), got.shape)
        raise Mismatch(
            f"{what}: entry {idx} is {got[idx]!s}; expected {expected[idx]!s} "
            f"({int(bad.sum())} entries are NaN or infinite where they should not be, "
            "or the other way round)"
        )
    if scale is None:
        scale = max(1.0, float(np.abs(e[finite_e]).max(initial=0.0)))
    with np.errstate(all="ignore"):
        diff = np.where(finite_e, np.abs(g - e), 0.0)
        allowed = tol * (np.abs(np.where(finite_e, e, 0.0)) + scale)
    over = diff > allowed
    if over.any():
        # The largest difference among the entries off: the place the picture of the weights names too.
        worst = largest_difference(diff, over)
        raise Mismatch(
            f"{what}: largest difference from the expected values is {diff[worst]:.3g} at index {worst}: "
            f"got {g[worst]:.10g}, expected {e[worst]:.10g} (tolerance {allowed[worst]:.2g} for {name}; "
            f"{int(over.sum())} of {got.size} entries are off)"
        )


def matches(got: Any, candidate: np.ndarray, rtol: float, scale: float | np.ndarray) -> bool:
    """Does ``got`` equal ``candidate`` within a check's own tolerance (:func:`compare_arrays`, dtype aside)?
    Used to name a mistake: the candidate is what that mistake computes."""
    if not isinstance(got, np.ndarray) or got.shape != np.shape(candidate) or got.dtype.kind != "f":
        return False
    try:
        compare_arrays(got, candidate, what="", rtol=rtol, scale=scale, check_dtype=False)
    except Mismatch:
        return False
    return True


def notes_of(record: Mapping[str, Any]) -> str:
    """What else the learner's function did (warnings, printed text), for a failure message."""
    parts = []
    if record.get("warnings"):
        parts.append("it warned: " + "; ".join(record["warnings"][:2]))
    if record.get("output"):
        parts.append("it printed: " + bounded(record["output"], 300).strip())
    return (" [" + " | ".join(parts) + "]") if parts else ""


def reference() -> ModuleType:
    """The reference implementation, imported only where expected values are computed."""
    from sdpa_course import lib

    return lib


def decide(cases: list[Case], results: object, judge: Judge, *, points: float, what: str) -> Verdict:
    """The verdict of one check (called ``what``, worth ``points``) on the learner's plain results.

    Any call into the reference earns nothing; so does a result list of the
    wrong length or a record that is not well formed. Then ``judge(cases,
    results)`` decides: it returns a summary of what passed, or raises
    :class:`Mismatch` (a :class:`Partial` keeps its share of the points).
    """
    if not isinstance(results, list) or len(results) != len(cases):
        return Verdict(False, 0.0, f"{what}: expected {len(cases)} results, got something else")
    records: list[ResultRecord] = []
    for case, record in zip(cases, results):
        if not well_formed(record):
            return Verdict(False, 0.0, f"{case['call']}: its result could not be read")
        records.append(record)
        forbidden = record["forbidden"]
        if forbidden:
            return Verdict(
                False,
                0.0,
                f"{case['call']} calls {', '.join(map(str, forbidden[:3]))}. {OWN_CODE.statement}",
            )
    try:
        with np.errstate(all="ignore"):
            summary = judge(cases, records)
    except Mismatch as exc:
        return Verdict(False, quantize(getattr(exc, "fraction", 0.0), points), str(exc))
    return Verdict(True, 1.0, summary)
