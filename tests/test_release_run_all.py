"""Run All on a blank release goes to the end, as "Start here" promises.

A learner who opens a homework and presses Run All before writing anything must
reach the check before you submit: every visible test reports 0 points without
raising, and no other cell (a "read the model" or "try it" cell that calls the
learner's functions) stops the run. Each release, as committed, runs here in a
desktop kernel in its own folder; the in-browser Jupyter proves the same on
the environment assignments (``tests/test_browser_jupyterlite.py``).
"""

from __future__ import annotations

import nbformat
import pytest
from fixtures.homework import submissions as subs
from release_run import before_submit_points, execute_as_learner

from sdpa_course import grading


@pytest.mark.parametrize("assignment", sorted(grading.ASSIGNMENTS))
def test_run_all_on_the_blank_release_reaches_the_check_before_you_submit(assignment):
    folder = subs.REPO / "exercises" / assignment
    nb = execute_as_learner(nbformat.read(folder / f"{assignment}.ipynb", as_version=4), folder)
    stopped = [
        (n, o["ename"], o["evalue"][:120])
        for n, cell in enumerate(nb.cells)
        for o in cell.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not stopped, f"{assignment}: Run All on the blank release raised in cells {stopped}"
    report = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.get("output_type") == "stream")
    total = sum(c.points for c in grading.checks_for(assignment))
    assert before_submit_points(report) == (assignment, 0.0, total)
