"""Stage 3 of grading one submission: compare, in the grader's process, and score.

Each check's raw results from the sandbox go through :mod:`grading`'s own
comparison (``check.compare``, which recomputes the expected values with
``lib``): the same comparison the notebooks' test cells use, here, where
nothing the learner's code did in its own process can reach it. A check that
did not run or whose results cannot be compared scores 0; a graded cell with
no check is left for manual grading. A cell is *flagged* when the in-kernel
run gave it more points than the comparison, on the same inputs: evidence
that the notebook changed the checks in its own process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from classgrader.assignments.course import AssignmentInfo
from classgrader.records import CellResult
from classgrader.stages.sandbox_run import Runs
from sdpa_course.grading.check import Check
from sdpa_course.grading.compare import Verdict

__all__ = ["Scores", "Verdict", "check_timeout_text", "compare", "in_kernel_points"]


@dataclasses.dataclass
class Scores:
    """The graded cells' scores and what the comparison found."""

    verdicts: dict[str, Verdict]  # check id -> verdict, its fraction in hundredths of the cell's points
    cells: dict[str, CellResult]  # grade_id -> score, in notebook order
    score: float  # their sum
    unchecked: list[str]  # grade_ids with no check: to grade by hand
    flagged: list[str]  # grade_ids where the in-kernel run gave more points


def compare(info: AssignmentInfo, runs: Runs) -> Scores:
    """Score every graded cell of ``info`` from the sandbox's results in ``runs``."""
    verdicts = {check.id: _verdict(check, runs) for check in info.checks}
    cells: dict[str, CellResult] = {}
    unchecked: list[str] = []
    for gid, points in info.grade_cells.items():
        if gid in verdicts:
            v = verdicts[gid]
            fraction = min(max(v.fraction, 0.0), 1.0)
            cells[gid] = CellResult(
                points=points, score=round(points * fraction, 2), passed=v.passed, message=v.message
            )
        else:
            cells[gid] = CellResult(
                points=points, score=None, passed=None, message="no outside check for this cell: grade it by hand"
            )
            unchecked.append(gid)
    score = round(sum(c["score"] or 0.0 for c in cells.values()), 6)
    flagged: list[str] = []
    for gid, cell in cells.items():
        kernel_score = in_kernel_points(runs.in_kernel.get(gid), cell["points"])
        if kernel_score is not None and cell["score"] is not None and kernel_score > cell["score"] + 0.01:
            flagged.append(gid)
    return Scores(verdicts=verdicts, cells=cells, score=score, unchecked=unchecked, flagged=flagged)


def _verdict(check: Check, runs: Runs) -> Verdict:
    """``check``'s verdict on what the sandbox sent back; its fraction is that of the points it scores."""
    event = runs.checks.get(check.id)
    if event is None:
        return Verdict(False, 0.0, "not run: the notebook's process ended before this check")
    if event.get("status") == "timeout":
        return Verdict(False, 0.0, check_timeout_text(check.functions))
    if event.get("status") != "ok":
        return Verdict(False, 0.0, f"could not run: {event.get('error') or event.get('status')}")
    try:
        verdict = check.compare(runs.cases[check.id], event.get("results"))
        return Verdict(
            bool(verdict.passed),
            check.score(verdict) / check.points if check.points else float(verdict.passed),
            str(verdict.message),
        )
    except Exception as exc:  # malformed results must not stop the batch
        return Verdict(False, 0.0, f"the results could not be compared ({type(exc).__name__})")


def check_timeout_text(functions: Sequence[str]) -> str:
    """Why a check stopped at its time budget scores 0, in the learner's terms."""
    names = ", ".join(f"{f}()" for f in functions) or "your function"
    return (
        f"stopped: {names} did not return within the time the grader allows for this test, "
        "so it scores 0. This usually means a loop that never ends (a while loop whose condition stays "
        "true), or work far larger than the exercise needs. Call it yourself on a small input: it "
        "should return at once"
    )


def in_kernel_points(record: str | None, points: float) -> float | None:
    """The points an in-kernel verdict gave a cell ("passed", "failed", "partial 1.5").

    >>> in_kernel_points("partial 1.5", 2), in_kernel_points("partial 9", 2), in_kernel_points("not run", 2)
    (1.5, 2.0, None)
    """
    if record == "passed":
        return float(points)
    if record == "failed":
        return 0.0
    if isinstance(record, str) and record.startswith("partial "):
        try:
            return min(max(float(record.split()[1]), 0.0), float(points))
        except ValueError:
            return None
    return None
