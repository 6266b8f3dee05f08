"""What a homework notebook's test cells call: one check, or all of them before submitting.

Here the three pieces of a check run in one go, in the learner's process
(``nbgrader autograde`` runs them the same way). Each assignment module names
one ``check_<name> = notebook_check(A, "<name>")`` (a :class:`NotebookCheck`,
``check_<name>(*functions, hidden=False, seed=None)``) per check and its hidden
twin, and ``check_before_submit = before_submit_check(A)`` for its notebook:

- full marks: prints what passed and returns None (nbgrader gives the cell
  all its points);
- partly right, or nothing right: prints what is wrong and returns the
  score (0 when nothing is right), the cell's value, which nbgrader reads as
  partial credit.

A failing check never raises: "Run All" goes on to the last cell, the check
before you submit, which is when a learner needs it most.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from .check import Assignment, Check
from .compare import Verdict, reference
from .plain import Case, ResultRecord
from .run import run_cases
from .seeds import ENV_SEED, autograde_location, hidden_seed

__all__ = [
    "BeforeSubmit",
    "NotebookCheck",
    "before_submit_check",
    "check_before_submit",
    "notebook_check",
    "run_check",
]


class NotebookCheck(Protocol):
    """What a test cell calls: ``hw2.check_softmax(softmax_rows)``, or with ``hidden=True`` the hidden check.

    Returns None on full marks, else the score (0 when nothing is right).
    """

    def __call__(
        self, *functions: Callable[..., Any], hidden: bool = False, seed: int | None = None
    ) -> float | None: ...


class BeforeSubmit(Protocol):
    """What the last cell calls: ``hw2.check_before_submit(globals())``; returns ``{check id: points}``."""

    def __call__(self, namespace: Mapping[str, Any], *, seed: int | None = None) -> dict[str, float]: ...


def run_check(
    assignment: Assignment, check_id: str, *functions: Callable[..., Any], seed: int | None = None
) -> float | None:
    """Run one check in this process on the learner's functions (given in the
    order of ``Check.functions``).

    Full marks: prints what passed and returns None (nbgrader then gives
    the cell all its points). Otherwise: prints what is wrong and returns
    the score, 0 when nothing is right, a number that nbgrader reads from
    the cell's output as partial credit. It never raises for a wrong
    answer, so that "Run All" reaches the check before you submit.
    A hidden check's seed comes from :func:`grading.seeds.hidden_seed`: the
    learner's own seed at grading, a fresh one when a learner practises.
    """
    chk = assignment.get(check_id)
    if len(functions) != len(chk.functions):
        raise TypeError(
            f"check {check_id!r} takes {len(chk.functions)} function(s), "
            f"{', '.join(chk.functions)}; got {len(functions)}"
        )
    if seed is None and chk.hidden:
        seed = hidden_seed(assignment.name)
    verdict = chk.grade(dict(zip(chk.functions, functions)), seed)
    extra = f" (hidden check, seed {seed})" if chk.hidden else ""
    if verdict.passed:
        print(f"passed: {verdict.message}")
        return None
    score = chk.score(verdict)
    how = "FAILED" if score <= 0 else "partly right"
    print(
        f"{how}, {score:g} of {_points(chk.points)} (the number below is this cell's score): {verdict.message}{extra}"
    )
    return float(score)


def _points(n: float) -> str:
    return f"{n:g} point" + ("" if n == 1 else "s")


def check_before_submit(
    assignment: Assignment, namespace: Mapping[str, Any], *, seed: int | None = None
) -> dict[str, float]:
    """The learner's "check before you submit": every check, said plainly.

    Runs every visible check and the learner's own copy of every hidden
    check (the same kinds of inputs, on a fresh random seed, not the ones
    of grading), with the functions defined in ``namespace`` (the
    notebook's ``globals()``), and prints what passed, what each failure
    means (the check's message names the mistake), the points that would
    follow, and that the hidden tests run again at grading; a wrong matrix of
    weights is also drawn, under the cell (:func:`show_mistakes`). Never raises
    and writes nothing to stderr. Returns ``{check id: points}``.

    It does nothing while a grader runs the notebook (``nbgrader
    autograde`` or the class grader), and says so when the reference
    ``lib`` cannot be imported (the learner kit is not installed).
    """
    if os.environ.get(ENV_SEED) or autograde_location() is not None:
        print("Check before you submit: skipped while the homework is graded.")
        return {}
    try:
        reference()
        lib_missing = False
    except Exception:  # not importable here (a sandbox, a copy outside the course folder)
        lib_missing = True
    if lib_missing:
        print(
            "Check before you submit: the checks compare your functions with the course's reference "
            "implementation (the `lib` package), which cannot be imported here. Install the course's "
            "learner kit (see Start here at the top of this notebook) or use Run in the browser, then "
            "run this cell again. Nothing was checked."
        )
        return {}
    seed = secrets.randbits(31) if seed is None else int(seed)
    lines: list[str] = []
    scores: dict[str, float] = {}
    failed: list[tuple[Check, list[Case], list[ResultRecord]]] = []
    total = sum(c.points for c in assignment.checks.values())
    for chk in assignment.checks.values():
        functions = {name: namespace[name] for name in chk.functions if name in namespace}
        missing = [name for name in chk.functions if name not in namespace]
        kind = "hidden kind, fresh inputs" if chk.hidden else "visible"
        head = f"- {chk.id} ({_points(chk.points)}, {kind}):"
        if missing:
            scores[chk.id] = 0.0
            lines.append(f"{head} NOT RUN: {', '.join(missing)} is not defined yet (run its cell first).")
            continue
        try:
            cases = chk.make_cases(seed if chk.hidden else None)
            results = run_cases(functions, cases)
            verdict = chk.compare(cases, results)
        except Exception as exc:  # a bug of the learner's that escaped: say it, never raise
            verdict = Verdict(False, 0.0, f"the check could not run ({type(exc).__name__}: {exc})")
        else:
            if not verdict.passed:
                failed.append((chk, cases, results))
        scores[chk.id] = chk.score(verdict)
        if verdict.passed:
            lines.append(f"{head} passed.")
        elif "NotImplementedError" in verdict.message:
            lines.append(f"{head} not answered yet ({', '.join(chk.functions)} still raises NotImplementedError).")
        else:
            how = "FAILED" if scores[chk.id] <= 0 else f"partly right, {scores[chk.id]:g} of {chk.points:g}"
            lines.append(f"{head} {how}.\n    It checks: {chk.description}.\n    What went wrong: {verdict.message}")
    got = round(sum(scores.values()), 2)
    print(f"Check before you submit ({assignment.name}): {got:g} of {total:g} points on these inputs.")
    print("\n".join(lines))
    print(
        "The hidden tests run again when your homework is graded, on inputs made for you (not these), "
        "so passing their kinds here makes full marks likely, not certain. A failure above names the "
        "case and the mistake; fix it and run this cell again (each run draws new hidden-kind inputs)."
    )
    show_mistakes(failed)
    return scores


def show_mistakes(failed: list[tuple[Check, list[Case], list[ResultRecord]]]) -> None:
    """Draw the first failed check of each learner function whose weights differ visibly
    (:mod:`grading.pictures`). The hidden kinds ran on fresh inputs, made for this run, which
    the learner may see. Never raises: a picture that cannot be drawn is left out."""
    from . import pictures

    drawn: set[tuple[str, ...]] = set()
    for chk, cases, results in failed:
        if chk.functions in drawn:
            continue
        try:
            picture = pictures.picture_for(chk, cases, results, fresh=True)
        except Exception:  # matplotlib missing or broken here: the words above still say it all
            continue
        if picture is not None:
            drawn.add(chk.functions)
            pictures.show(picture, f"Picture of {chk.id}")


def notebook_check(assignment: Assignment, base: str) -> NotebookCheck:
    """The function a test cell calls for check ``base``: ``check_<base>(*functions, hidden=False, seed=None)``.

    ``notebook_check(A, "softmax")(f)`` runs check ``softmax``; with ``hidden=True`` it runs
    ``softmax_hidden``. Call it after the checks are added: its docstring lists them.
    """
    variants = [c for c in (base, f"{base}_hidden") if c in assignment.checks]
    if not variants:
        raise ValueError(f"{assignment.name} has no check {base!r} nor {base + '_hidden'!r}: add it before naming it")

    def runner(*functions: Callable[..., Any], hidden: bool = False, seed: int | None = None) -> float | None:
        # Returns None on full marks; a partly right answer returns its
        # score, which becomes the cell's output and nbgrader's partial credit.
        return run_check(assignment, f"{base}_hidden" if hidden else base, *functions, seed=seed)

    runner.__name__ = runner.__qualname__ = f"check_{base}"
    runner.__doc__ = "\n".join(
        f"hidden={assignment.checks[c].hidden}: {assignment.checks[c].description}" for c in variants
    )
    return runner


def before_submit_check(assignment: Assignment) -> BeforeSubmit:
    """The last cell's ``check_before_submit(globals(), seed=None)`` (:func:`check_before_submit`)."""

    def before_submit(namespace: Mapping[str, Any], *, seed: int | None = None) -> dict[str, float]:
        return check_before_submit(assignment, namespace, seed=seed)

    before_submit.__name__ = before_submit.__qualname__ = "check_before_submit"
    before_submit.__doc__ = check_before_submit.__doc__
    return before_submit
