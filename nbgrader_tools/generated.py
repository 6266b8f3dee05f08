"""The cells every homework notebook shares, written from one source each.

A source notebook in ``solutions/`` opens with two generated, locked cells
before its task statement:

- ``start_here``: the notebook's title and the *Start here* section (where to
  work, the check before submitting, how to hand it in), from the one
  template ``solutions/start_here.md``. An instructor whose class hands in
  another way edits that file and runs ``./course release``.
- ``grading_rules``: the rules that can cost points in this assignment, from
  the checks' own declarations (:attr:`grading.check.Check.rules`), in the
  words their feedback uses (:func:`grading.rules.rules_text`).

:func:`sync` puts them in place (``./course release`` runs it on every source
notebook before nbgrader makes the releases); :func:`problems` says when a
notebook's copies are stale.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from sdpa_course.grading import ASSIGNMENTS
from sdpa_course.grading.rules import rules_text

from .cells import SELF_CHECK_ID, nbgrader_meta, self_check_source, text_cell

__all__ = ["RULES_ID", "START_HERE_ID", "TEMPLATE", "expected_cells", "problems", "sync"]

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "solutions" / "start_here.md"
START_HERE_ID = "start_here"
RULES_ID = "grading_rules"
GENERATED = (START_HERE_ID, RULES_ID)


def kit_names() -> dict[str, str]:
    """The learner kit's file names and install lines (one per line, indented as in a list item),
    as the start-here text names them."""
    from .kit import HOMEWORK_ZIP, REQUIREMENTS, learner_lines, wheel_name

    lines = {f"{system}_lines": "\n  ".join(learner_lines(system)) for system in ("unix", "windows")}
    return {"wheel": wheel_name(), "requirements": REQUIREMENTS, "homework_zip": HOMEWORK_ZIP, **lines}


def _title(nb: nbformat.NotebookNode) -> str:
    for cell in nb.cells[:2]:
        for line in cell.source.splitlines():
            if line.startswith("# "):
                return line
    raise ValueError("the notebook has no '# Homework ...' title in its first cells")


def expected_cells(nb: nbformat.NotebookNode, assignment: str) -> dict[str, str]:
    """grade_id -> the text each generated cell must hold."""
    start = TEMPLATE.read_text(encoding="utf-8").strip().format(notebook=f"{assignment}.ipynb", **kit_names())
    rules = ASSIGNMENTS[assignment].A.rules()
    return {START_HERE_ID: f"{_title(nb)}\n\n{start}", RULES_ID: rules_text(rules)}


def sync(path: Path, assignment: str) -> bool:
    """Write the generated cells into a source notebook (the title moves into the first).
    Returns whether the file changed."""
    nb = nbformat.read(str(path), as_version=4)
    want = expected_cells(nb, assignment)
    title = _title(nb)
    kept = [c for c in nb.cells if nbgrader_meta(c).get("grade_id") not in GENERATED]
    statement = kept[0]
    lines = statement.source.splitlines()
    if lines and lines[0] == title:
        statement.source = "\n".join(lines[1:]).strip()
    # A generated cell keeps the id it had, so a release with nothing new rewrites nothing.
    ids = {nbgrader_meta(c).get("grade_id"): c.get("id") for c in nb.cells}
    start_here, rules = (text_cell(want[gid], gid) for gid in (START_HERE_ID, RULES_ID))
    for cell, gid in ((start_here, START_HERE_ID), (rules, RULES_ID)):
        if ids.get(gid):
            cell.id = ids[gid]
    cells = [start_here, statement, rules]
    new_cells = cells + kept[1:]
    last = new_cells[-1]
    if nbgrader_meta(last).get("grade_id") == SELF_CHECK_ID:
        last.source = self_check_source(ASSIGNMENTS[assignment].__name__.rsplit(".", 1)[-1])
    old = nbformat.writes(nb)
    nb.cells = new_cells
    changed = nbformat.writes(nb) != old
    if changed:
        nbformat.write(nb, str(path))
    return changed


def problems(nb: nbformat.NotebookNode, assignment: str) -> list[str]:
    """What is stale or missing among a source notebook's generated cells."""
    found = []
    want = expected_cells(nb, assignment)
    ids = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    for index, grade_id in ((0, START_HERE_ID), (2, RULES_ID)):
        if len(ids) <= index or ids[index] != grade_id:
            found.append(f"cell {index} must be the generated {grade_id!r} cell (run ./course release)")
        elif nb.cells[index].source.strip() != want[grade_id].strip():
            found.append(f"the {grade_id!r} cell is stale (run ./course release)")
    return found
