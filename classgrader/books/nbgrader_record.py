"""nbgrader's own record of an assignment, made by nbgrader's ``generate_assignment``.

``nbgrader autograde`` grades a submission against what its gradebook holds:
``generate_assignment``'s ``SaveCells`` stored every graded and locked cell
of the instructor source there, after ``InstantiateTests`` expanded the
autotest directives (with ``autotests.yml``) and before ``ClearHiddenTests``
took the hidden tests out of the release; ``OverwriteCells`` puts those
cells back into each submission. The class grader takes its test cells from
the same record, made by the same code: :func:`record` runs nbgrader's
``GenerateAssignment`` app (all its preprocessors, with the course's
``nbgrader_config.py``) on the instructor source, writing the student
version into a scratch folder (the committed release is left alone) and the
record into the run's gradebook; :func:`test_cells` reads the test cells back.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import re
import tempfile
from pathlib import Path
from typing import Any

from nbgrader import api
from nbgrader.converters import GenerateAssignment
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import capture_log
from traitlets.config import Config

from classgrader.assignments.errors import SetupError
from classgrader.books.gradebook import open_gradebook


def ensure(
    course: Path, assignment: str, notebooks: list[str], db_url: str, course_id: str, config: Config, *, refresh: bool
) -> None:
    """Make sure the gradebook holds nbgrader's record of ``assignment`` (its ``notebooks``, file names).

    With ``refresh``, record it again even when it is there: a plain
    assignment's test cells are its source's, which the instructor may have
    changed since (nbgrader itself needs ``generate_assignment`` run again).
    """
    if refresh or not all(knows(db_url, course_id, assignment, Path(nb).stem) for nb in notebooks):
        record(course, assignment, db_url, course_id, config)


def record(course: Path, assignment: str, db_url: str, course_id: str, config: Config) -> None:
    """Run nbgrader's ``generate_assignment`` for ``assignment`` of ``course``, into the gradebook at ``db_url``.

    ``config`` is the course's ``nbgrader_config.py`` as read. Raises
    :class:`SetupError` with nbgrader's own message when nbgrader refuses the
    source (a malformed autotest directive, no ``autotests.yml``, a grade id
    used twice, ...).
    """
    with open_gradebook(db_url, course_id):  # created (and stamped) as the grader creates every gradebook
        pass
    with tempfile.TemporaryDirectory(prefix="nbgrader-release-") as scratch:
        cfg = copy.deepcopy(config)
        cfg.CourseDirectory.root = str(course)
        cfg.CourseDirectory.source_directory = "solutions"  # where the grader reads every instructor source
        cfg.CourseDirectory.release_directory = scratch
        cfg.CourseDirectory.db_url = db_url
        cfg.CourseDirectory.course_id = course_id
        coursedir = CourseDirectory(config=cfg)
        coursedir.assignment_id = assignment
        logger = logging.getLogger("classgrader.nbgrader")
        logger.propagate = False  # what nbgrader says goes to the message below, not to the terminal
        app = GenerateAssignment(coursedir=coursedir, config=cfg, log=logger)
        app.force = True
        app.create_assignment = True
        # nbgrader looks for a course-wide autotests.yml in the folder it runs in: the course's root.
        with contextlib.chdir(course):
            outcome = capture_log(app)
    if not outcome["success"]:
        raise SetupError(f"nbgrader generate_assignment refused solutions/{assignment}: {_reason(outcome)}")


def _reason(outcome: dict[str, Any]) -> str:
    """What nbgrader's log says went wrong: the exception its traceback ends with, and the step that raised it
    (nbgrader's own summary lines only say to read the traceback)."""
    log = outcome.get("log") or ""
    raised = re.findall(r"^\s*((?:\w+\.)*\w*(?:Error|Exception)\b.*)$", log, re.M)
    steps = re.findall(r"nbgrader/preprocessors/(\w+)\.py", log)
    if raised:
        return str(raised[-1]).strip() + (f" (in nbgrader's {steps[-1]} step)" if steps else "")
    said = [line for line in log.splitlines() if line.startswith(("[ERROR]", "[CRITICAL]"))]
    return "\n".join(said) or "no reason given"


def knows(db_url: str, course_id: str, assignment: str, notebook: str) -> bool:
    """Whether the gradebook already holds the record of ``notebook`` (a stem) with its graded cells."""
    with open_gradebook(db_url, course_id) as gb:
        try:
            return bool(gb.find_notebook(notebook, assignment).grade_cells)
        except api.MissingEntry:
            return False


def test_cells(db_url: str, course_id: str, assignment: str, notebook: str) -> dict[str, str]:
    """Each autograded test cell of ``notebook`` (a stem) as nbgrader recorded it: grade id -> source,
    autotests expanded and hidden tests included."""
    with open_gradebook(db_url, course_id) as gb:
        try:
            nb = gb.find_notebook(notebook, assignment)
        except api.MissingEntry:
            return {}
        graded = {g.name for g in nb.grade_cells} - {s.name for s in nb.solution_cells}
        return {cell.name: cell.source for cell in nb.source_cells if cell.cell_type == "code" and cell.name in graded}
