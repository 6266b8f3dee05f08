"""nbgrader's cell metadata: read it (:func:`nbgrader_meta`) and write it.

nbgrader keeps what it knows about a cell in ``cell.metadata["nbgrader"]``:
``grade_id``, ``grade`` (a test cell), ``solution`` (an answer cell),
``locked``, ``points``. The source notebooks in ``solutions/`` are the
source of truth; the writers here only make the metadata that nbgrader
expects.

>>> cell = autograder_tests_cell("hw1.check_scores_loop(scores_loop)", "scores_loop", 2)
>>> nbgrader_meta(cell)["points"], nbgrader_meta(cell)["locked"]
(2, True)
>>> nbgrader_meta({"cell_type": "code", "metadata": {"nbgrader": "broken"}})
{}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import nbformat


def nbgrader_meta(cell: Mapping[str, Any]) -> dict:
    """A cell's nbgrader metadata, or ``{}`` when it has none (or it is malformed)."""
    metadata = cell.get("metadata")
    meta = metadata.get("nbgrader") if isinstance(metadata, Mapping) else None
    return meta if isinstance(meta, dict) else {}


SCHEMA = 3
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: float | None = None) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": SCHEMA,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def text_cell(source: str, grade_id: str):
    """A read-only markdown cell (task statements, explanations)."""
    return nbformat.v4.new_markdown_cell(
        source.strip(), metadata=_meta(grade_id, grade=False, solution=False, locked=True)
    )


def setup_cell(source: str, grade_id: str):
    """A read-only code cell (imports and setup)."""
    return nbformat.v4.new_code_cell(source.strip(), metadata=_meta(grade_id, grade=False, solution=False, locked=True))


def answer_cell(source: str, grade_id: str):
    """An answer cell; its ``### BEGIN SOLUTION`` region is cleared in the release."""
    if "### BEGIN SOLUTION" not in source:
        raise ValueError(f"answer cell {grade_id!r} has no ### BEGIN SOLUTION region")
    return nbformat.v4.new_code_cell(source.strip(), metadata=_meta(grade_id, grade=False, solution=True, locked=False))


def autograder_tests_cell(source: str, grade_id: str, points: float):
    """A read-only, graded test cell, nbgrader's "Autograder tests" (hidden tests
    between the HIDDEN TESTS markers)."""
    return nbformat.v4.new_code_cell(
        source.strip(), metadata=_meta(grade_id, grade=True, solution=False, locked=True, points=points)
    )


#: grade_id of the "check before you submit" cells at the end of every homework notebook.
SELF_CHECK_TEXT_ID = "check_before_submit_text"
SELF_CHECK_ID = "check_before_submit"


def self_check_source(short: str) -> str:
    """The code of the "check before you submit" cell of assignment module ``short`` (e.g. "hw2")."""
    return f"""# Check before you submit: runs every visible test and your own copy of the hidden tests'
# kinds on fresh random inputs, and says what passed and what each failure means.
# It is not graded and changes nothing.
try:
    from sdpa_course.grading import {short}
except ImportError:
    print("The checks come with the course's learner kit: install it (see Start here at the top "
          "of this notebook) or use Run in the browser, then run this cell again. Nothing was checked.")
else:
    {short}.check_before_submit(globals())"""


def self_check_cells(short: str) -> list:
    """The two cells that end every homework notebook: a short text and the check cell."""
    text = (
        "## Check before you submit\n\n"
        "Run the next cell when you think you are done. It runs the visible tests above and your own "
        "copy of the hidden tests: the same kinds of inputs (sizes, float32 and float64, batches, "
        "extreme values) drawn fresh each time, not the ones used for grading. It says what passed, "
        "what each failure means, and the points that would follow. The hidden tests run again when "
        "your homework is graded."
    )
    return [text_cell(text, SELF_CHECK_TEXT_ID), setup_cell(self_check_source(short), SELF_CHECK_ID)]


def notebook(cells: list) -> nbformat.NotebookNode:
    """A homework source notebook of these cells, with the course's kernel (for writing a new homework)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    return nb
