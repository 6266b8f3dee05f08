"""Grade one submission, in five stages, each in its own module.

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

from classgrader import sandbox
from classgrader.after_deadline import late
from classgrader.assignments.course import AssignmentInfo
from classgrader.pipeline.intake import Submission
from classgrader.stages import feedback_pictures, plain_grade
from classgrader.stages.graded import Graded
from classgrader.stages.match import match as match
from classgrader.stages.record import record as record
from classgrader.stages.report import render as render
from classgrader.stages.sandbox_run import Settings, run
from classgrader.stages.scoring import compare as compare

# The stages are imported as themselves (``x as x``), names of this module: the
# profile benchmark (benchmarks/class_grading_profile.py) times each one here.
__all__ = ["Graded", "Settings", "grade"]


def grade(
    info: AssignmentInfo,
    sub: Submission,
    settings: Settings,
    policy: late.Policy | None = None,
    *,
    slot: int = 0,
    registry: sandbox.Registry | None = None,
) -> Graded:
    """Grade one submission: match -> run -> compare -> record -> report.

    ``slot`` is the worker's number (its sandbox uid); ``registry`` holds the
    running sandboxes, so that an interrupt can stop them. A plain nbgrader
    assignment (no checks in :mod:`grading`) is graded by :mod:`classgrader.stages.plain_grade`.
    """
    if info.plain:
        return plain_grade.grade(info, sub, settings, policy, slot=slot, registry=registry)
    matched = match(info, sub)
    runs = scores = None
    if matched.plan is not None:
        runs = run(info, sub, matched.plan, settings, slot=slot, registry=registry)
        scores = compare(info, runs)
    result, notebook = record(info, sub, matched, runs, scores, settings.limits, policy)
    if notebook is not None and runs is not None and scores is not None:
        feedback_pictures.attach(notebook, info, runs, scores)
    return Graded(result, notebook, render(result, notebook, base_url=info.book_url))
