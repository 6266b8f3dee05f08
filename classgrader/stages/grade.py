"""Grade one submission, in five stages, each in its own module.

Both kinds of assignment go through the same five stages (:class:`Stages`):
a course assignment through the modules below (:class:`CourseStages`), a
plain nbgrader assignment through :class:`classgrader.stages.plain_grade.PlainStages`,
which scores each test cell as ``nbgrader autograde`` does. Which stages an
assignment takes is decided here, once, by its kind.

1. **match** (:mod:`classgrader.stages.match`): read the file and line its cells up
   with the release;
2. **run** (:mod:`classgrader.stages.sandbox_run`): run it in the sandbox, where grading's
   collector calls the learner's functions on the checks' inputs; then, for
   the record, run it as ``nbgrader autograde`` would;
3. **compare** (:mod:`classgrader.stages.scoring`): score each graded cell with
   :mod:`grading`'s comparison, here in the grader's process;
4. **record** (:mod:`classgrader.stages.record`): the result (status, notes,
   scores, late penalty) and the autograded notebook;
5. **report** (:mod:`classgrader.stages.report`): the learner's feedback page.

:func:`grade` writes nothing: :mod:`classgrader.pipeline.class_run` saves what it returns
and writes the gradebook. The score of every graded cell comes from the
comparison, computed from plain JSON results that the learner's functions
produced in the sandbox, on inputs the learner never saw before the run, so
that nothing the learner's code does in its own process can reach it, and
the same file always gets the same score. When the in-kernel run gives a
cell more points than the comparison, on the same inputs, that is evidence
of tampering (the learner's code changed the checks in its own process) and
the cell is flagged.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import nbformat

from classgrader import sandbox
from classgrader.after_deadline import late
from classgrader.assignments.course import AssignmentInfo, CourseKind
from classgrader.assignments.plain_nbgrader import PlainKind
from classgrader.pipeline.intake import Submission
from classgrader.records import Result
from classgrader.stages import feedback_pictures, plain_grade
from classgrader.stages.graded import Graded
from classgrader.stages.match import Matched
from classgrader.stages.match import match as match
from classgrader.stages.record import record as record
from classgrader.stages.report import render as render
from classgrader.stages.sandbox_run import Runs, Settings, run
from classgrader.stages.scoring import Scores
from classgrader.stages.scoring import compare as compare

# The stages are imported as themselves (``x as x``), names of this module: the
# profile benchmark (benchmarks/class_grading_profile.py) times each one here.
__all__ = ["CourseStages", "Graded", "Settings", "Stages", "grade"]


class Stages(Protocol):
    """The five stages of grading one submission of one kind of assignment. ``match`` makes the
    submission's state; each later stage reads what the earlier ones put there and adds its own."""

    def match(self, info: AssignmentInfo, sub: Submission) -> Any: ...

    def run(
        self,
        info: AssignmentInfo,
        sub: Submission,
        state: Any,
        settings: Settings,
        *,
        slot: int,
        registry: sandbox.Registry | None,
    ) -> None: ...

    def compare(self, info: AssignmentInfo, sub: Submission, state: Any, settings: Settings) -> None: ...

    def record(
        self, info: AssignmentInfo, sub: Submission, state: Any, settings: Settings, policy: late.Policy | None
    ) -> Result: ...

    def report(self, info: AssignmentInfo, state: Any, result: Result) -> Graded: ...


@dataclasses.dataclass
class CourseState:
    """One submission of a course assignment, as far as the stages have taken it."""

    matched: Matched
    runs: Runs | None = None  # None: nothing ran (missing, not a notebook)
    scores: Scores | None = None
    notebook: nbformat.NotebookNode | None = None  # the autograded notebook


class CourseStages:
    """A course assignment's stages: the modules named in this module's docstring."""

    def match(self, info: AssignmentInfo, sub: Submission) -> CourseState:
        return CourseState(match(info, sub))

    def run(
        self,
        info: AssignmentInfo,
        sub: Submission,
        state: CourseState,
        settings: Settings,
        *,
        slot: int,
        registry: sandbox.Registry | None,
    ) -> None:
        if state.matched.plan is not None:
            state.runs = run(info, sub, state.matched.plan, settings, slot=slot, registry=registry)

    def compare(self, info: AssignmentInfo, sub: Submission, state: CourseState, settings: Settings) -> None:
        if state.runs is not None:
            state.scores = compare(info, state.runs)

    def record(
        self, info: AssignmentInfo, sub: Submission, state: CourseState, settings: Settings, policy: late.Policy | None
    ) -> Result:
        result, state.notebook = record(info, sub, state.matched, state.runs, state.scores, settings.limits, policy)
        if state.notebook is not None and state.runs is not None and state.scores is not None:
            feedback_pictures.attach(state.notebook, info, state.runs, state.scores)
        return result

    def report(self, info: AssignmentInfo, state: CourseState, result: Result) -> Graded:
        return Graded(result, state.notebook, render(result, state.notebook, base_url=info.book_url))


#: Each kind of assignment's stages.
STAGES: dict[type, Stages] = {CourseKind: CourseStages(), PlainKind: plain_grade.PlainStages()}


def grade(
    info: AssignmentInfo,
    sub: Submission,
    settings: Settings,
    policy: late.Policy | None = None,
    *,
    slot: int = 0,
    registry: sandbox.Registry | None = None,
) -> Graded:
    """Grade one submission: match -> run -> compare -> record -> report, by the stages of its kind.

    ``slot`` is the worker's number (its sandbox uid); ``registry`` holds the
    running sandboxes, so that an interrupt can stop them.
    """
    stages = STAGES[type(info.kind)]
    state = stages.match(info, sub)
    stages.run(info, sub, state, settings, slot=slot, registry=registry)
    stages.compare(info, sub, state, settings)
    result = stages.record(info, sub, state, settings, policy)
    return stages.report(info, state, result)
