"""Write grades into nbgrader's gradebook: SQLite by default, PostgreSQL by URL.

:class:`Writer` stores results; :func:`cell_scores` reads the scores back.
Every submission is one transaction: the student, the submission, its
notebook and every grade and comment row are created if missing and their
scores *set* (never added to), then committed together, or rolled back
together on any error. Writing the same result twice therefore changes
nothing, and a run that is interrupted between two submissions leaves each of
them either fully written or not at all.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from pathlib import Path

from nbgrader import api
from nbgrader.api import Comment, Grade, Gradebook, SubmittedAssignment, SubmittedNotebook

from classgrader.after_deadline.late import late_of
from classgrader.records import Result


def _alembic_on_path() -> None:
    """nbgrader runs ``alembic heads`` from PATH when it creates a gradebook, to
    stamp it with the newest migration. That command takes seconds to start, so
    the newest migration is read from nbgrader's migration files instead (the
    revision that no other revision follows); ``alembic`` stays the fallback."""
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    if getattr(api.get_alembic_version, "_classgrader", False):
        return
    head = _alembic_head()
    if head is not None:

        def get_alembic_version() -> str:
            return head

        get_alembic_version._classgrader = True  # type: ignore[attr-defined]  # our patch, marked
        api.get_alembic_version = get_alembic_version


def _alembic_head() -> str | None:
    versions = Path(api.__file__).parent / "alembic" / "versions"
    revisions, parents = set(), set()
    for path in versions.glob("*.py"):
        text = path.read_text(errors="replace")
        rev = re.search(r"^revision\s*=\s*['\"](\w+)['\"]", text, re.M)
        down = re.search(r"^down_revision\s*=\s*['\"](\w+)['\"]", text, re.M)
        if rev:
            revisions.add(rev.group(1))
        if down:
            parents.add(down.group(1))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def normalise_url(url: str) -> str:
    """``postgresql://`` URLs use psycopg (version 3), the driver this project pins."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def open_gradebook(db_url: str, course_id: str) -> Gradebook:
    """nbgrader's gradebook at ``db_url`` (created if missing), to use in a ``with`` block."""
    _alembic_on_path()
    return Gradebook(db_url, course_id=course_id)


def cell_scores(
    gb: Gradebook, assignment: str, *, student: str | None = None, notebook: str | None = None, auto: bool = False
) -> dict[str, dict[str, float | None]]:
    """``{student: {grade_id: score}}`` for the submissions of ``assignment`` in ``gb``.

    A cell's score is nbgrader's (the instructor's manual score if set, else
    the automatic one), or with ``auto`` the automatic score alone; None
    where nothing is stored (a hand-graded cell not graded yet). ``student`` reads one student only (``{}`` when
    they have no submission); ``notebook`` reads that notebook only, and
    leaves out submissions without it; otherwise every notebook's cells.
    """
    if student is None:
        subs = gb.assignment_submissions(assignment)
    else:
        try:
            subs = [gb.find_submission(assignment, student)]
        except api.MissingEntry:
            return {}
    out = {}
    for sub in subs:
        nbs = [nb for nb in sub.notebooks if notebook is None or nb.name == notebook]
        if notebook is not None and not nbs:
            continue
        out[sub.student_id] = {g.cell.name: _score(g, auto) for nb in nbs for g in nb.grades}
    return out


def _score(grade: Grade, auto: bool) -> float | None:
    """nbgrader's score of a cell (its ``Grade.score`` reads 0 for a cell graded neither automatically nor
    by hand: here None), or with ``auto`` the automatic score alone."""
    value = grade.auto_score if auto or (grade.manual_score is None and grade.auto_score is None) else grade.score
    return None if value is None else float(value)


def extensions(gb: Gradebook, assignment: str) -> dict[str, float]:
    """``{student: seconds}``: nbgrader's per-student extensions (``SubmittedAssignment.extension``) of
    ``assignment``, for the students who have one."""
    try:
        subs = gb.assignment_submissions(assignment)
    except api.MissingEntry:
        return {}
    return {s.student_id: s.extension.total_seconds() for s in subs if s.extension}


def names(gb: Gradebook) -> dict[str, str]:
    """``{student: "First Last"}`` for the gradebook's students that have a name."""
    out = {}
    for s in gb.students:
        name = " ".join(part for part in (s.first_name, s.last_name) if part)
        if name:
            out[s.id] = name
    return out


class Writer:
    """One open gradebook; :meth:`write` stores one submission's result."""

    def __init__(self, db_url: str, course_id: str):
        self.gb = open_gradebook(db_url, course_id)

    def close(self) -> None:
        self.gb.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def current(self, assignment: str, student: str) -> dict[str, float | None] | None:
        """The auto scores stored now for a student, or None without a submission."""
        return cell_scores(self.gb, assignment, student=student, auto=True).get(student)

    def write(self, result: Result) -> None:
        """Store one graded result (see :mod:`classgrader.stages.grade`) in one transaction."""
        db = self.gb.db
        assignment, student = result["assignment"], result["student"]
        notebook = result["notebook"]
        covered = set(result.get("notebooks") or [notebook])  # a plain assignment's result covers them all
        try:
            student_row = db.get(api.Student, student)
            if student_row is None:
                student_row = api.Student(id=student, first_name=result.get("display_name") or None)
                db.add(student_row)
            assignment_row = self.gb.find_assignment(assignment)
            sub = (
                db.query(SubmittedAssignment)
                .filter(
                    SubmittedAssignment.assignment_id == assignment_row.id, SubmittedAssignment.student_id == student
                )
                .one_or_none()
            )
            if sub is None:
                sub = SubmittedAssignment(assignment=assignment_row, student=student_row)
                db.add(sub)
            late = late_of(result)
            deadline = late.get("deadline")
            if deadline:  # nbgrader's due date: naive UTC
                assignment_row.duedate = _naive_utc(deadline)
            stamp = late.get("submitted_at") or result.get("timestamp")
            if stamp:
                try:
                    sub.timestamp = _naive_utc(stamp) if late.get("submitted_at") else api.utils.parse_utc(stamp)
                except Exception:  # an unreadable timestamp.txt is not worth failing a grade
                    pass
            for nb_row in assignment_row.notebooks:
                snb = next((n for n in sub.notebooks if n.notebook_id == nb_row.id), None)
                if snb is None:
                    snb = SubmittedNotebook(notebook=nb_row, assignment=sub)
                    db.add(snb)
                snb.flagged = bool(result.get("flagged")) if nb_row.name in covered else snb.flagged
                if nb_row.name == notebook:  # as nbgrader's AssignLatePenalties: None when not late
                    snb.late_submission_penalty = float(late["penalty"]) if late.get("penalty") else None
                grades = {g.cell_id: g for g in snb.grades}
                for cell in nb_row.grade_cells:
                    grade = grades.get(cell.id) or Grade(cell_id=cell.id, notebook=snb)
                    if cell.id not in grades:
                        db.add(grade)
                    # a grade id that two notebooks share is named <notebook>/<grade id> in the result
                    key = f"{nb_row.name}/{cell.name}" if f"{nb_row.name}/{cell.name}" in result["cells"] else cell.name
                    cell_result = result["cells"].get(key) if nb_row.name in covered else None
                    score = None if cell_result is None else cell_result.get("score")
                    grade.auto_score = score
                    grade.needs_manual_grade = score is None or grade.manual_score is not None
                comments = {c.cell_id: c for c in snb.comments}
                for cell in list(nb_row.solution_cells) + list(nb_row.task_cells):
                    comment = comments.get(cell.id) or Comment(cell_id=cell.id, notebook=snb)
                    if cell.id not in comments:
                        db.add(comment)
                    if nb_row.name in covered:
                        said = result.get("comments", {})
                        comment.auto_comment = said.get(f"{nb_row.name}/{cell.name}", said.get(cell.name))
                for cell in nb_row.task_cells:
                    if cell.id not in grades:
                        db.add(Grade(cell_id=cell.id, notebook=snb))
            db.commit()
        except BaseException:
            db.rollback()
            raise


def _naive_utc(iso: str) -> dt.datetime:
    """nbgrader stores times as naive UTC datetimes."""
    when = dt.datetime.fromisoformat(iso)
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when


def utcnow() -> str:
    """Now, as ISO 8601 in UTC."""
    return dt.datetime.now(dt.UTC).isoformat()
