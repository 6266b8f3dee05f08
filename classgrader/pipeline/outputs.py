"""Where one assignment's outputs go, and the files one graded submission leaves.

:func:`save` writes in the order that makes an interruption harmless: the
autograded notebook and the feedback page first, the result JSON last (each
via a temporary file and an atomic rename); from the result on, the
submission counts as graded.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from classgrader.assignments.course import AssignmentInfo
from classgrader.books import gradebook
from classgrader.pipeline import intake
from classgrader.records import Result, write_bytes_atomic
from classgrader.records import write_json_atomic as write_json_atomic
from classgrader.records import write_text_atomic as write_text_atomic
from classgrader.stages import report
from classgrader.stages.grade import Graded

# write_json_atomic and write_text_atomic are imported as themselves (``x as x``),
# names of this module: the profile benchmark (benchmarks/class_grading_profile.py)
# times the saves here.

#: The files of an nbgrader submission that its feedback needs: ``nbgrader release_feedback`` reads both
#: beside each feedback page (the secret makes the name under which ``fetch_feedback`` finds the page).
HANDOVER = ("timestamp.txt", "submission_secret.txt")


class Paths:
    """Where one assignment's outputs go, under ``out``."""

    def __init__(self, out: Path, assignment: str, notebook_stem: str):
        self.out = out
        self.assignment = assignment
        self.stem = notebook_stem
        self.reports = out / "reports" / assignment
        self.results = self.reports / "results"

    def result(self, student: str) -> Path:
        return self.results / f"{student}.json"

    def autograded(self, student: str, stem: str | None = None) -> Path:
        return self.out / "autograded" / student / self.assignment / f"{stem or self.stem}.ipynb"

    def feedback(self, student: str, stem: str | None = None) -> Path:
        return self.out / "feedback" / student / self.assignment / f"{stem or self.stem}.html"


def save(paths: Paths, graded: Graded, sub: intake.Submission) -> None:
    """The autograded notebook, the feedback page, then the result: from now on it counts as graded.

    A student with no submission gets no feedback page: there is nothing to return (and
    ``nbgrader release_feedback`` would stop at a page with no submission behind it).
    """
    result = graded.result
    student = result["student"]
    pages = graded.pages or {paths.stem: (graded.notebook, graded.feedback)}
    for stem, (notebook, page) in pages.items():
        if notebook is not None:
            write_text_atomic(paths.autograded(student, stem), nbformat.writes(notebook))
        if result["status"] != "missing":
            write_text_atomic(paths.feedback(student, stem), page)
    for name, data in graded.files.items():  # what the notebooks wrote, beside them (as nbgrader keeps it)
        write_bytes_atomic(paths.autograded(student).parent / name, data)
    if result["status"] != "missing":
        hand_over(paths, sub)
    result["graded_at"] = gradebook.utcnow()
    write_json_atomic(paths.result(student), result)


def hand_over(paths: Paths, sub: intake.Submission) -> None:
    """Copy the submission's ``timestamp.txt`` and ``submission_secret.txt`` (nbgrader's layout) beside its
    feedback page and autograded notebook, as ``nbgrader autograde`` and ``generate_feedback`` do, so that
    ``nbgrader release_feedback`` and ``fetch_feedback`` return the course's page to the learner."""
    if sub.path is None or sub.layout != "nbgrader":
        return
    folders = [paths.feedback(sub.student).parent, paths.autograded(sub.student).parent]
    for name in HANDOVER:
        src = sub.path.parent / name
        if not src.is_file():
            continue
        text = src.read_text(errors="replace")
        for folder in folders:
            dest = folder / name
            if folder.is_dir() and (not dest.is_file() or dest.read_text(errors="replace") != text):
                write_text_atomic(dest, text)


def put_back_feedback(paths: Paths, info: AssignmentInfo, sub: intake.Submission, result: Result) -> None:
    """The course's feedback page for an already graded submission, written again if it is missing or if
    another tool (``nbgrader generate_feedback``) has replaced it; and the files the exchange needs."""
    if result["status"] == "missing":
        return
    for stem in result.get("notebooks") or [paths.stem]:  # a plain assignment's notebooks, each with its page
        autograded = paths.autograded(sub.student, stem)
        nb = nbformat.read(autograded, as_version=4) if autograded.exists() else None
        page = report.render(result, nb, base_url=info.book_url, stem=stem)
        target = paths.feedback(sub.student, stem)
        if not target.is_file() or target.read_text(errors="replace") != page:
            write_text_atomic(target, page)
    hand_over(paths, sub)
