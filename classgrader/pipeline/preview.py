"""What a regrade would change, shown before anything changes (``./course grade ... --preview``).

:func:`preview` grades every submission again under the current inputs (the
checks, ``lib``, the limits, the late policy), as ``--regrade`` would, but
into a scratch folder with a scratch gradebook, deleted afterwards; then it
compares each student's new result with the one saved in the real output
folder. Nothing there is written: not the gradebook (even when it is a
database given with ``--db``), the results, the feedback, the reports or the
LMS files. An interrupted preview leaves nothing behind. The same file
always gets the same score (its hidden inputs come from the course secret),
so ``--regrade`` afterwards gives exactly the scores the preview showed.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from classgrader.records import Result, read_result


@dataclasses.dataclass(frozen=True)
class Move:
    """One student whose grade would change: the final scores and the cells that moved them."""

    student: str
    old: float | None  # None: no saved result (a new submission)
    new: float
    cells: dict[str, tuple[float | None, float | None]]  # grade id -> (old score, new score)

    @property
    def change(self) -> float:
        return self.new - (self.old or 0.0)


@dataclasses.dataclass(frozen=True)
class Preview:
    assignment: str
    students: int  # how many the regrade covers
    moves: list[Move]

    @property
    def up(self) -> int:
        return sum(m.change > 0 for m in self.moves)

    @property
    def down(self) -> int:
        return sum(m.change < 0 for m in self.moves)


def final_score(result: Result) -> float:
    """The score after the late penalty, as the reports and the LMS files carry it."""
    late: dict[str, Any] = dict(result.get("late") or {})
    final = late.get("final_score")
    return float(final if final is not None else result.get("score") or 0.0)


def saved_results(out: Path, assignment: str) -> dict[str, Result]:
    folder = out / "reports" / assignment / "results"
    found = (read_result(p) for p in sorted(folder.glob("*.json"))) if folder.is_dir() else ()
    return {r["student"]: r for r in found if r is not None and "student" in r}


def compare(assignment: str, old: dict[str, Result], new: dict[str, Result]) -> Preview:
    """Each student whose final score or any cell's score differs between ``old`` and ``new``."""
    moves = []
    for student in sorted(new):
        before, after = old.get(student), new[student]
        before_cells = {g: c.get("score") for g, c in (before["cells"] if before is not None else {}).items()}
        after_cells = {g: c.get("score") for g, c in after["cells"].items()}
        cells = {
            g: (before_cells.get(g), after_cells.get(g))
            for g in sorted(set(before_cells) | set(after_cells))
            if before_cells.get(g) != after_cells.get(g)
        }
        old_final = None if before is None else final_score(before)
        if cells or old_final != final_score(after):
            moves.append(Move(student, old_final, final_score(after), cells))
    return Preview(assignment, len(new), moves)


def preview(course: Path, assignment: str, submissions: Path, out: Path, **grade_options: Any) -> Preview:
    """Grade ``submissions`` again into a scratch folder and compare with what ``out`` holds (see the module
    docstring). ``grade_options`` go to :func:`~classgrader.pipeline.class_run.grade_class` (not ``out``,
    ``db_url`` or ``regrade``: those are the preview's)."""
    from classgrader.pipeline.class_run import grade_class

    old = saved_results(out, assignment)
    with tempfile.TemporaryDirectory(prefix="classgrader-preview-") as scratch:
        grade_class(course, assignment, submissions, out=Path(scratch), db_url=None, regrade=True, **grade_options)
        new = saved_results(Path(scratch), assignment)
    return compare(assignment, old, new)


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def text(p: Preview) -> str:
    """The preview as the command prints it: one line per student who moves, then the summary."""
    lines = [f"preview of a regrade of {p.assignment}: nothing was written"]
    for m in p.moves:
        moved = ", ".join(f"{g} {_points(a)} -> {_points(b)}" for g, (a, b) in m.cells.items())
        lines.append(
            f"  {m.student}: {_points(m.old)} -> {_points(m.new)} ({m.change:+g})" + (f"; {moved}" if moved else "")
        )
    if not p.moves:
        lines.append(f"no grade would change ({p.students} students)")
    else:
        largest = max(p.moves, key=lambda m: abs(m.change))
        lines.append(
            f"{len(p.moves)} of {p.students} students would move: {p.up} up, {p.down} down; "
            f"largest change {largest.change:+g} ({largest.student}). Apply it with --regrade."
        )
    return "\n".join(lines)
