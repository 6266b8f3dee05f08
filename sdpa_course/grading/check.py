"""What a check is: :class:`Check` (one graded test cell) and :class:`Assignment` (its checks).

An assignment module (``sdpa_course/grading/hwN.py``) makes one ``Assignment``, adds its
checks in notebook order, and names the functions its notebook calls
(:func:`grading.notebook.notebook_check`). Which assignments exist is
:mod:`grading.registry`'s business, not this module's: nothing here is
global.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .compare import Judge, Verdict, decide, score_of
from .plain import Case
from .rules import DTYPE, IN_PLACE, OWN_CODE, Rule
from .run import run_cases

__all__ = ["Assignment", "Check"]

#: Builds a check's input cases from a seed (plain data, :mod:`grading.plain`).
Cases = Callable[[int], list[Case]]


@dataclass(frozen=True)
class Check:
    """One graded test cell of one assignment.

    ``id`` is also the nbgrader ``grade_id`` of the test cell that runs it,
    and ``points`` its points. ``functions`` names the learner functions that
    the cases call. ``cases(seed)`` builds the inputs; ``judge(cases,
    results)`` raises :class:`~grading.compare.Mismatch` with a message for
    the learner, or returns a one-line summary of what passed.
    """

    assignment: str
    id: str
    functions: tuple[str, ...]
    points: float
    hidden: bool
    description: str
    cases: Cases = field(repr=False)
    judge: Judge = field(repr=False)
    #: The rules that cost points which this check can apply (:mod:`grading.rules`); the
    #: notebook states each of them, and the feedback repeats its statement.
    rules: tuple[Rule, ...] = (OWN_CODE, IN_PLACE, DTYPE)
    #: Seed of the visible checks (fixed, so the learner sees the same cases each time).
    default_seed: int = 0

    # piece (1)
    def make_cases(self, seed: int | None = None) -> list[Case]:
        """The check's input cases as plain JSON data, the same for the same seed."""
        return self.cases(self.default_seed if seed is None else int(seed))

    # piece (3); piece (2) is grading.run.run_cases, in the learner's process
    def compare(self, cases: list[Case], results: object) -> Verdict:
        """Decide the check from the cases and the learner's plain results, untrusted JSON
        (:func:`grading.compare.decide`; expected values are computed with ``lib``)."""
        return decide(cases, results, self.judge, points=self.points, what=self.id)

    def score(self, verdict: Verdict) -> float:
        """The points a verdict earns (rounded to hundredths, as nbgrader stores them)."""
        return score_of(self.points, verdict.fraction)

    def grade(self, functions: Mapping[str, Any], seed: int | None = None) -> Verdict:
        """(1) -> (2) -> (3) in this process."""
        cases = self.make_cases(seed)
        return self.compare(cases, run_cases(functions, cases))


class Assignment:
    """The checks of one assignment, in notebook order.

    ``A = Assignment("hw2_stable_softmax", chapter=...)``, then one
    :meth:`add` per graded test cell.
    """

    def __init__(self, name: str, chapter: str) -> None:
        self.name = name
        self.chapter = chapter
        #: check id -> Check, in the order they were added.
        self.checks: dict[str, Check] = {}

    def add(
        self,
        id: str,
        functions: Sequence[str],
        *,
        points: float,
        cases: Cases,
        judge: Judge,
        description: str,
        hidden: bool | None = None,
        rules: Sequence[Rule] | None = None,
    ) -> Check:
        """Add a check; ids ending in ``_hidden`` are hidden checks.

        Every check can apply :data:`~grading.rules.OWN_CODE` (a call into the
        reference earns nothing: :func:`grading.compare.decide`). ``rules`` names
        the others its judge can apply; by default those of
        :func:`grading.authoring.judge_each`, :data:`~grading.rules.IN_PLACE` and
        :data:`~grading.rules.DTYPE`, which apply when the cases pass arrays (in
        place) and float32 arrays (dtype)."""
        hidden = id.endswith("_hidden") if hidden is None else hidden
        if id in self.checks:
            raise ValueError(f"{self.name} already has a check {id!r}")
        applied = (OWN_CODE,) + tuple((IN_PLACE, DTYPE) if rules is None else rules)
        check = Check(self.name, id, tuple(functions), float(points), hidden, description, cases, judge, rules=applied)
        self.checks[id] = check
        return check

    def rules(self) -> list[Rule]:
        """The rules that any check of this assignment can apply, each once, in the order first met."""
        found: dict[str, Rule] = {}
        for check in self.checks.values():
            for rule in check.rules:
                found.setdefault(rule.id, rule)
        return list(found.values())

    def get(self, check_id: str) -> Check:
        """One check by id (= the test cell's grade_id)."""
        try:
            return self.checks[check_id]
        except KeyError:
            raise KeyError(f"{self.name} has no check {check_id!r}; it has {sorted(self.checks)}") from None
