"""Writing and checking the nbgrader cells of a homework source notebook.

The source notebooks in ``solutions/`` are the source of truth; these helpers
only make the cell metadata that nbgrader expects, and check a notebook
against the registry of checks, so that every graded cell runs exactly the
check with its id and points.

>>> cell = test_cell("hw1.check_scores_loop(scores_loop)", "scores_loop", 2)
>>> cell.metadata["nbgrader"]["points"], cell.metadata["nbgrader"]["locked"]
(2, True)
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from .core import checks_for

SCHEMA = 3
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def text_cell(source: str, grade_id: str):
    """A read-only markdown cell (task statements, explanations)."""
    return nbformat.v4.new_markdown_cell(source.strip(), metadata=_meta(grade_id, grade=False, solution=False,
                                                                        locked=True))


def setup_cell(source: str, grade_id: str):
    """A read-only code cell (imports and setup)."""
    return nbformat.v4.new_code_cell(source.strip(), metadata=_meta(grade_id, grade=False, solution=False,
                                                                    locked=True))


def answer_cell(source: str, grade_id: str):
    """An answer cell; its ``### BEGIN SOLUTION`` region is cleared in the release."""
    if "### BEGIN SOLUTION" not in source:
        raise ValueError(f"answer cell {grade_id!r} has no ### BEGIN SOLUTION region")
    return nbformat.v4.new_code_cell(source.strip(), metadata=_meta(grade_id, grade=False, solution=True,
                                                                    locked=False))


def test_cell(source: str, grade_id: str, points: float):
    """A read-only, graded test cell (hidden tests between the HIDDEN TESTS markers)."""
    return nbformat.v4.new_code_cell(source.strip(), metadata=_meta(grade_id, grade=True, solution=False,
                                                                    locked=True, points=points))


#: grade_id of the "check before you submit" cells at the end of every homework notebook.
SELF_CHECK_TEXT_ID = "check_before_submit_text"
SELF_CHECK_ID = "check_before_submit"


def self_check_source(short: str) -> str:
    """The code of the "check before you submit" cell of assignment module ``short`` (e.g. "hw2")."""
    return f"""# Check before you submit: runs every visible test and your own copy of the hidden tests'
# kinds on fresh random inputs, and says what passed and what each failure means.
# It is not graded and changes nothing.
try:
    from grading import {short}
except ImportError:
    print("The checks come with the course: open this notebook from the course folder "
          "(./course lab, see the welcome page) and run this cell again. Nothing was checked.")
else:
    {short}.check_before_submit(globals())"""


def self_check_cells(short: str) -> list:
    """The two cells that end every homework notebook: a short text and the check cell."""
    text = ("## Check before you submit\n\n"
            "Run the next cell when you think you are done. It runs the visible tests above and your own "
            "copy of the hidden tests: the same kinds of inputs (sizes, float32 and float64, batches, "
            "extreme values) drawn fresh each time, not the ones used for grading. It says what passed, "
            "what each failure means, and the points that would follow. The hidden tests run again when "
            "your homework is graded.")
    return [text_cell(text, SELF_CHECK_TEXT_ID), setup_cell(self_check_source(short), SELF_CHECK_ID)]


def notebook(cells: list) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def problems(path: str | Path, assignment: str) -> list[str]:
    """What is wrong with a source notebook, compared with the registry (empty when fine).

    Every check has exactly one test cell with its id as ``grade_id``, its
    points, locked, calling it (with ``hidden=True`` inside a hidden-tests
    region exactly when the check is hidden); every code cell is either
    locked or an answer cell; the first cell is a locked statement that links
    the assignment's chapter.
    """
    from . import ASSIGNMENTS

    nb = nbformat.read(str(path), as_version=4)
    found: list[str] = []
    module = ASSIGNMENTS[assignment]
    short = module.__name__.rsplit(".", 1)[-1]
    tests = {}
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader")
        where = f"cell {index}"
        if meta is None:
            if cell.cell_type == "code":
                found.append(f"{where}: a code cell without nbgrader metadata")
            continue
        if meta.get("grade") and cell.cell_type == "code":
            tests[meta["grade_id"]] = (index, cell, meta)
        elif cell.cell_type == "code" and not (meta.get("locked") or meta.get("solution")):
            found.append(f"{where}: a code cell that is neither locked nor an answer cell")
        if meta.get("solution") and "### BEGIN SOLUTION" not in cell.source:
            found.append(f"{where}: answer cell without a ### BEGIN SOLUTION region")
    first = nb.cells[0] if nb.cells else None
    chapter = Path(module.A.chapter).name
    if first is None or first.cell_type != "markdown" or chapter not in first.source:
        found.append(f"the first cell must be a markdown statement that links {module.A.chapter}")
    elif not first.metadata.get("nbgrader", {}).get("locked"):
        found.append("the first cell (the statement) must be locked")
    for check in checks_for(assignment):
        if check.id not in tests:
            found.append(f"no test cell with grade_id {check.id!r}")
            continue
        index, cell, meta = tests.pop(check.id)
        where = f"test cell {check.id!r}"
        if float(meta.get("points", -1)) != check.points:
            found.append(f"{where}: {meta.get('points')} points; the check has {check.points:g}")
        if not meta.get("locked"):
            found.append(f"{where}: not locked")
        base = check.id.removesuffix("_hidden")
        call = re.search(rf"{short}\.check_{base}\((.*)\)", cell.source)
        if call is None:
            found.append(f"{where}: does not call {short}.check_{base}(...)")
        hidden_region = re.search(r"### BEGIN HIDDEN TESTS(.*)### END HIDDEN TESTS", cell.source, re.S)
        if check.hidden and (hidden_region is None or "hidden=True" not in hidden_region.group(1)):
            found.append(f"{where}: a hidden check must be called with hidden=True inside the hidden-tests region")
        if not check.hidden and ("hidden=True" in cell.source or hidden_region is not None):
            found.append(f"{where}: a visible check must not be hidden")
    for grade_id in tests:
        found.append(f"test cell {grade_id!r} has no check in grading")
    last = nb.cells[-1] if nb.cells else None
    if last is None or last.metadata.get("nbgrader", {}).get("grade_id") != SELF_CHECK_ID \
            or last.source.strip() != self_check_source(short).strip() \
            or not last.metadata.get("nbgrader", {}).get("locked"):
        found.append(f"the last cell must be the locked 'check before you submit' cell "
                     f"(grading.authoring.self_check_cells({short!r}))")
    return found
