"""Check a homework source notebook (``solutions/``) against the checks of :mod:`grading`.

Every graded cell must run exactly the check with its id and points:
:func:`problems` lists what is not so (``tests/test_homework_grading.py``
runs it on every source notebook).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from sdpa_course.grading import ASSIGNMENTS, checks_for

from .cells import SELF_CHECK_ID, nbgrader_meta, self_check_source
from .generated import GENERATED
from .generated import problems as generated_problems
from .points import problems as points_problems


def problems(path: str | Path, assignment: str) -> list[str]:
    """What is wrong with a source notebook, compared with the registry (empty when fine).

    Every check has exactly one test cell with its id as ``grade_id``, its
    points, locked, calling it (with ``hidden=True`` inside a hidden-tests
    region exactly when the check is hidden); every code cell is either
    locked or an answer cell; the generated cells (:mod:`nbgrader_tools.generated`)
    are current, and the first other cell is a locked statement that links
    the assignment's chapter.
    """
    nb = nbformat.read(str(path), as_version=4)
    found: list[str] = []
    module = ASSIGNMENTS[assignment]
    short = module.__name__.rsplit(".", 1)[-1]
    tests: dict[str, tuple] = {}
    for index, cell in enumerate(nb.cells):
        meta = nbgrader_meta(cell)
        where = f"cell {index}"
        if not meta:
            if cell.cell_type == "code":
                found.append(f"{where}: a code cell without nbgrader metadata")
            continue
        if meta.get("grade") and cell.cell_type == "code":
            tests[meta["grade_id"]] = (index, cell, meta)
        elif cell.cell_type == "code" and not (meta.get("locked") or meta.get("solution")):
            found.append(f"{where}: a code cell that is neither locked nor an answer cell")
        if meta.get("solution") and "### BEGIN SOLUTION" not in cell.source:
            found.append(f"{where}: answer cell without a ### BEGIN SOLUTION region")
    found += generated_problems(nb, assignment)
    found += points_problems(nb, assignment, Path(path).name)
    statements = [c for c in nb.cells if nbgrader_meta(c).get("grade_id") not in GENERATED]
    first = statements[0] if statements else None
    chapter = Path(module.A.chapter).name
    if first is None or first.cell_type != "markdown" or chapter not in first.source:
        found.append(
            f"the first cell after the generated ones must be a markdown statement that links {module.A.chapter}"
        )
    elif not nbgrader_meta(first).get("locked"):
        found.append("the statement must be locked")
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
    if (
        last is None
        or nbgrader_meta(last).get("grade_id") != SELF_CHECK_ID
        or last.source.strip() != self_check_source(short).strip()
        or not nbgrader_meta(last).get("locked")
    ):
        found.append(
            f"the last cell must be the locked 'check before you submit' cell "
            f"(nbgrader_tools.cells.self_check_cells({short!r}))"
        )
    return found
