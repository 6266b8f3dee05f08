"""Piece (2) of a check: calling the learner's functions, in the learner's process.

:func:`run_cases` takes the input cases (plain data, :mod:`grading.plain`),
calls the learner's functions on them under the call watch
(:mod:`grading.watch`) and returns one result record per case, again plain
data. It needs only numpy (never ``lib``), so the class grader runs it inside
the sandbox, and the comparison that decides the score happens elsewhere
(:mod:`grading.compare`).
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import traceback
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .plain import Case, ResultRecord, bounded, case_inputs, encode, new_record
from .watch import GRADING_DIR, SYSTEM_DIRS, CallWatch

__all__ = ["call_learner", "run_cases"]


def _learner_error(exc: BaseException) -> str:
    """``"ValueError: message (in f, line 3: return x @ y)"``, from the learner's frames."""
    text = str(exc)
    message = (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:600]
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if not os.path.realpath(f.filename).startswith(GRADING_DIR)
    ]
    ours = [f for f in frames if not os.path.realpath(f.filename).startswith(SYSTEM_DIRS)]
    where = (ours or frames)[-1:] if frames else []
    if where:
        f = where[0]
        line = (f.line or "").strip()
        message += f" (in {f.name}, line {f.lineno}" + (f": {line[:120]})" if line else ")")
    return message


def call_learner(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any], *, count_lines: bool = False) -> ResultRecord:
    """Call ``fn(*args, **kwargs)`` under a :class:`CallWatch` and describe the outcome.

    Returns a result record (see :mod:`grading.plain`); what the function
    printed or warned is captured, so that a check cell never writes to stderr.
    """
    if not callable(fn):
        return new_record(f"TypeError: {type(fn).__name__} object is not callable")
    record = new_record()
    out = io.StringIO()
    before = _snapshots(args, kwargs)
    start = time.perf_counter()
    with (
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(out),
    ):
        warnings.simplefilter("always")
        watch = CallWatch(count_lines=count_lines)
        try:
            with watch:
                value = fn(*args, **kwargs)
        except Exception as exc:  # the learner's error becomes part of the record
            record["error"] = _learner_error(exc)
        else:
            record["value"] = encode(value)
    record["seconds"] = round(time.perf_counter() - start, 6)
    record["forbidden"] = list(watch.forbidden)
    record["calls"] = sorted(watch.noted_calls)
    record["mutated"] = _changed(before, args, kwargs)
    record["warnings"] = [bounded(f"{w.category.__name__}: {w.message}", 300) for w in caught[:5]]
    record["output"] = bounded(out.getvalue())
    if count_lines:
        record["lines"] = watch.lines
    return record


def _snapshots(args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Copies of the array inputs (also inside tuples and lists), by a name for the learner."""
    found: dict[str, np.ndarray] = {}

    def walk(value: Any, name: str, depth: int = 0) -> None:
        if type(value) is np.ndarray:
            found[name] = value.copy()
        elif type(value) in (tuple, list) and depth < 3:
            for i, item in enumerate(value):
                walk(item, f"{name}[{i}]", depth + 1)

    for i, a in enumerate(args, 1):
        walk(a, f"argument {i}")
    for key, a in kwargs.items():
        walk(a, key)
    return found


def _changed(before: dict[str, np.ndarray], args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[str]:
    """The names of array inputs whose contents the call changed (in place)."""
    after = _snapshots(args, kwargs)
    return [
        name
        for name, old in before.items()
        if name in after and not np.array_equal(old, after[name], equal_nan=old.dtype.kind == "f")
    ][:5]


def run_cases(functions: Mapping[str, Any], cases: Iterable[Case]) -> list[ResultRecord]:
    """Piece (2): run the learner's functions on every case; plain data out.

    ``functions`` maps names to the learner's callables (e.g. a notebook's
    globals); a missing name is reported in the record, not raised. Needs
    numpy only, so it can run in a sandbox without ``lib``. The result is
    ``json.dumps``-able with ``allow_nan=False``.
    """
    results = []
    for case in cases:
        name = case["call"]
        if name not in functions:
            results.append(new_record(f"NameError: no function named {name!r} is defined"))
            continue
        args, kwargs = case_inputs(case)
        results.append(call_learner(functions[name], args, kwargs, count_lines=bool(case.get("count_lines"))))
    return results
