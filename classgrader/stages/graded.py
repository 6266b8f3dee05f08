"""What grading one submission gives: the stages' outcome, for a course or a plain assignment alike."""

from __future__ import annotations

import dataclasses

import nbformat

from classgrader.records import Result


@dataclasses.dataclass
class Graded:
    """One graded submission: its result, its autograded notebook (None when nothing ran), its feedback page."""

    result: Result
    notebook: nbformat.NotebookNode | None
    feedback: str
    #: For an assignment of several notebooks: each one's stem -> (autograded notebook, feedback page).
    pages: dict[str, tuple[nbformat.NotebookNode | None, str]] = dataclasses.field(default_factory=dict)
    #: Files the notebooks wrote as they ran (name -> content), kept beside the autograded notebooks as
    #: ``nbgrader autograde`` keeps them (a plain assignment's; never written into the submission).
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)
