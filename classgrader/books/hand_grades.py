"""The scores and comments an instructor gave by hand in nbgrader's formgrader, counted as nbgrader counts them.

nbgrader keeps a hand score beside the automatic one (``Grade.manual_score``)
and counts it instead (``Grade.score``); a comment typed under an answer is
``Comment.manual_comment``. The class grader's saved results
(``results/<student>.json``) keep what the autograder gave, so that a regrade
compares like with like; the reports, the LMS files and the feedback pages are
made from :func:`apply`'s copy of each result, which counts the instructor's
grades (and re-prices a late penalty on the new raw score).
"""

from __future__ import annotations

import copy
import dataclasses

from nbgrader import api
from nbgrader.api import Gradebook

from classgrader.after_deadline import late
from classgrader.records import Result


@dataclasses.dataclass(frozen=True)
class HandGrades:
    """One student's hand grades, by the result's cell keys (``<notebook>/<id>`` for an id two notebooks use)."""

    scores: dict[str, float]
    comments: dict[str, str]


def read(gb: Gradebook, assignment: str) -> dict[str, HandGrades]:
    """``{student: HandGrades}`` for the students of ``assignment`` who have a hand score or comment in ``gb``."""
    try:
        assignment_row = gb.find_assignment(assignment)
    except api.MissingEntry:
        return {}
    holders: dict[str, set[str]] = {}  # cell name -> the notebooks that have it (as a grade or answer cell)
    for nb in assignment_row.notebooks:
        for cell in [*nb.grade_cells, *nb.solution_cells]:
            holders.setdefault(cell.name, set()).add(nb.name)
    shared = {name for name, where in holders.items() if len(where) > 1}

    def key(notebook: str, name: str) -> str:
        return f"{notebook}/{name}" if name in shared else name

    out = {}
    for sub in gb.assignment_submissions(assignment):
        scores = {
            key(nb.name, g.cell.name): float(g.manual_score)
            for nb in sub.notebooks
            for g in nb.grades
            if g.manual_score is not None
        }
        comments = {
            key(nb.name, c.cell.name): c.manual_comment for nb in sub.notebooks for c in nb.comments if c.manual_comment
        }
        if scores or comments:
            out[sub.student_id] = HandGrades(scores, comments)
    return out


def apply(result: Result, hand: HandGrades | None, policy: late.Policy, extension: float = 0.0) -> Result:
    """``result`` with the instructor's hand grades counted (a copy; ``result`` itself is left as graded)."""
    if hand is None or result["status"] == "missing":
        return result
    out = copy.deepcopy(result)
    change = 0.0
    for gid, score in hand.scores.items():
        cell = out["cells"].get(gid)
        if cell is None:
            continue
        auto = cell.get("score")
        change += score - (auto or 0.0)
        cell["score"], cell["by_hand"] = score, True
        cell["passed"] = score >= float(cell.get("points") or 0)
        overridden = auto is not None and auto != score
        cell["message"] = "graded by hand" + (f" (the tests gave {auto:g})" if overridden else "")
    out["hand_comments"] = dict(hand.comments)
    if "manual" in out:
        out["manual"] = [gid for gid in out["manual"] if gid not in hand.scores]
    out["score"] = round(float(out["score"]) + change, 6)
    late.reprice_saved(out, policy, extension)
    return out
