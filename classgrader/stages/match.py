"""Stage 1 of grading one submission: read the file and line its cells up with the release.

A submission that is missing or not a notebook stops here, with its status;
any other gets a :class:`~classgrader.stages.notebooks.Plan` (what runs, in which
order, and what was repaired). :mod:`classgrader.stages.notebooks` does the reading
and the lining up.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Literal

from classgrader.assignments.course import AssignmentInfo, submission_key
from classgrader.pipeline.intake import Submission
from classgrader.stages import notebooks


@dataclasses.dataclass
class Matched:
    """The submission's key, and its plan or why there is none."""

    key: str
    sha256: str | None = None  # of the submitted file; None when nothing was submitted
    plan: notebooks.Plan | None = None
    status: Literal["missing", "not_a_notebook"] | None = None  # when there is no plan
    reason: str = ""  # why it is not a notebook


def match(info: AssignmentInfo, sub: Submission) -> Matched:
    """Read ``sub``'s file and line it up with ``info``'s release."""
    if sub.path is None:
        return Matched(key=submission_key(info, None), status="missing")
    data = sub.path.read_bytes()
    matched = Matched(key=submission_key(info, data), sha256=hashlib.sha256(data).hexdigest())
    try:
        learner = notebooks.load(data, sub.original_name or sub.path.name)
    except notebooks.NotANotebook as exc:
        matched.status, matched.reason = "not_a_notebook", str(exc)
        return matched
    matched.plan = notebooks.match(learner, info.release)
    return matched
