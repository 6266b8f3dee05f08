"""Judging a check case by case: each case an equal share, partial credit by the size of the mistake."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..compare import NARROWER, Mismatch, Partial, coarser_precision, notes_of, value_of
from ..plain import Case, ResultRecord, case_inputs
from ..rules import DTYPE, DTYPE_SHARE, IN_PLACE, MUTATION_SHARE, PRECISION

#: Judges one case: ``judge_one(args, kwargs, value, name)`` with the case's decoded arguments,
#: the learner's decoded return value and the function's name; raises
#: :class:`~grading.compare.Mismatch` (or :class:`~grading.compare.Partial`) when it is wrong.
CaseJudge = Callable[[list[Any], dict[str, Any], Any, str], None]


def _float_dtype(args: Sequence[Any], kwargs: dict[str, Any]) -> np.dtype | None:
    """The float dtype the result must have: that of the float array inputs."""
    found: list[np.dtype] = []

    def walk(v: Any, depth: int = 0) -> None:
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


def judge_each(cases: list[Case], results: list[ResultRecord], judge_one: CaseJudge, *, precision: bool = False) -> int:
    """Run ``judge_one(args, kwargs, value, name)`` on every case; return the number of cases.

    Points follow the size of the mistake: each case is worth the same share
    of the check, and a case earns

    - all of its share when ``judge_one`` returns;
    - ``DTYPE_SHARE`` of it when the values are right but a float result has
      the wrong dtype (``judge_one`` passes on the result cast to the input's
      dtype), or, with ``precision`` (the checks that state
      :data:`~grading.rules.PRECISION`), when they are right only to the precision
      of the next narrower type (``judge_one`` passes under
      :func:`~grading.compare.coarser_precision`);
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
                narrower = NARROWER.get(dtype.name) if precision and dtype is not None and not changed else None
                if narrower is not None and dtype is not None and share < DTYPE_SHARE:
                    try:
                        with coarser_precision():
                            judge_one(*case_inputs(case), value, case["call"])
                    except Mismatch:
                        pass
                    else:
                        share = DTYPE_SHARE
                        problem = (
                            f"{problem}. Your results agree with the expected ones to about {narrower[1]} "
                            f"significant digits, the precision of {narrower[0]}, not of {dtype.name}: something "
                            f"computes in {narrower[0]}, such as the scale sqrt(d_k) (np.sqrt(np.{narrower[0]}(d_k))); "
                            f"compute it in the input's dtype. {PRECISION.statement}"
                        )
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


def unpack(value: Any, names: Sequence[str], what: str) -> tuple[Any, ...]:
    """A returned tuple of ``len(names)`` items, or :class:`Mismatch`."""
    wanted = "(" + ", ".join(names) + ")"
    if not isinstance(value, (tuple, list)):
        kind = "an array" if isinstance(value, np.ndarray) else f"a {type(value).__name__}"
        raise Mismatch(f"{what} returned {kind}; expected a tuple {wanted}")
    if len(value) != len(names):
        raise Mismatch(f"{what} returned {len(value)} items; expected {len(names)}: {wanted}")
    return tuple(value)
