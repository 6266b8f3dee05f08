"""What the class grader sends, receives and keeps: one typed definition of each.

Three records cross a boundary, each as plain JSON:

- the **job** (:class:`Job`) that the grader writes for the sandbox, read by
  :mod:`classgrader.sandbox.driver` in the learner's process;
- the **events** that the driver writes back, one JSON object per line
  (:class:`StartEvent`, :class:`CellStartEvent`, :class:`CellEvent`,
  :class:`CheckEvent`, :class:`DoneEvent`; an event too large or not
  serialisable comes back as a :class:`ProblemEvent`; how each job's process
  ended comes on a separate control pipe as an :class:`ExitEvent`). Each also carries
  ``clock``, the host's monotonic clock when it was written (for
  ``benchmarks/class_grading_profile.py``). Learner code shares the
  driver's process and can forge any of them, so the grader reads them with
  ``.get`` and trusts none of their values;
- the **result** (:class:`Result`) of one submission, saved as
  ``reports/<assignment>/results/<student>.json`` and read back by a later run
  (to skip unchanged submissions), the gradebook writer, the feedback page,
  the class reports and the item analysis.

They are ``TypedDict``\\ s: at run time plain dicts, so what is written is
exactly the JSON that is read, with no conversion in between (the driver, which
runs alone in the sandbox, imports them for the type checker only). Here too
are the statuses a submission can end with and the atomic writers every output
goes through.
"""

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, cast

if TYPE_CHECKING:  # the cases are grading's; this module stays importable without it
    from sdpa_course.grading.plain import Case

# --------------------------------------------------------------------------
# Statuses
# --------------------------------------------------------------------------

#: One status per submission (the keys of :data:`STATUSES`).
Status = Literal[
    "missing",
    "not_a_notebook",
    "timed_out",
    "out_of_memory",
    "kernel_died",
    "metadata_stripped",
    "test_cells_changed",
    "renamed",
    "graded",
]

#: One status per submission, the most serious first, with its meaning.
STATUSES: dict[Status, str] = {
    "missing": "missing: nothing was submitted",
    "not_a_notebook": "not a notebook: the file could not be read as a notebook",
    "timed_out": "timed out: the wall-time limit stopped a cell or a check",
    "out_of_memory": "out of memory: the memory limit stopped a cell or a check",
    "kernel_died": "kernel died: the learner's process ended before grading finished",
    "metadata_stripped": "nbgrader metadata stripped: cells recovered by matching them to the release",
    "test_cells_changed": "test cells edited, duplicated or deleted: the release's test cells were used",
    "renamed": "notebook renamed: matched to the assignment",
    "graded": "graded",
}

#: The statuses of a run that ended badly (the checks that had not run score 0).
RunFailure = Literal["timed_out", "out_of_memory", "kernel_died"]

#: How a cell or a check ended inside the sandbox.
RunStatus = Literal["ok", "error", "timeout", "memory"]

# --------------------------------------------------------------------------
# The job: grader -> sandbox
# --------------------------------------------------------------------------


class JobCell(TypedDict):
    """One code cell to run: its place in the plan (``n``), source and role."""

    n: int
    source: str
    role: str  # setup, answer, extra, test (see classgrader.stages.notebooks.PlanCell)
    grade_id: str | None


class JobCheck(TypedDict):
    """One graded check: the learner functions it calls and its input cases."""

    id: str
    functions: list[str]
    collector: str  # "module:function" that calls the functions on the cases, e.g. grading's run_cases
    cases: list["Case"]


class Job(TypedDict):
    """What the driver is asked to do (a file in ``/grader/.run`` in the sandbox, named on its stdin).

    In ``"score"`` mode it runs the cells that are not tests, then each check's
    collector; in ``"record"`` mode every cell in order, as nbgrader would,
    with ``hidden_seed`` for the hidden tests. The last four keys are set by
    :meth:`classgrader.sandbox.session.Session.run` from the limits.
    """

    mode: NotRequired[Literal["score", "record"]]  # default "score"
    cells: list[JobCell]
    checks: list[JobCheck]
    hidden_seed: NotRequired[int]
    keep_files: NotRequired[bool]  # send back the files the cells wrote (a plain assignment's side effects)
    wall: NotRequired[float]  # seconds for the whole run
    cell_share: NotRequired[float]  # the share of ``wall`` the notebook's own cells may use
    cell_output_chars: NotRequired[int]  # output kept per stream and cell
    sys_path: NotRequired[list[str]]  # where the grader's packages are


# --------------------------------------------------------------------------
# The events: sandbox -> grader
# --------------------------------------------------------------------------


class StartEvent(TypedDict):
    event: Literal["start"]
    pid: int
    uid: int  # the grader refuses a sandbox that ran as root (0)


class CellStartEvent(TypedDict):
    event: Literal["cell_start"]
    n: int


class CellEvent(TypedDict):
    """A cell has run: how it ended, its bounded output, and its value when a number."""

    event: Literal["cell"]
    n: int
    role: str | None
    status: RunStatus
    error: str | None
    stdout: str
    stderr: str
    value: int | float | None  # a test cell's value: nbgrader's partial credit
    display: NotRequired[str | None]  # the value's text/plain form, as nbgrader's execute_result holds it
    seconds: float


class CheckEvent(TypedDict):
    """A check's collector has run: the raw results, plain JSON, for the grader to compare."""

    event: Literal["check"]
    id: str
    status: RunStatus
    results: Any
    error: str | None


class DoneEvent(TypedDict):
    event: Literal["done"]
    seconds: float


class ProblemEvent(TypedDict):
    """What is sent instead of an event that could not be written whole."""

    event: str | None
    id: str | None
    n: int | None
    unserialisable: NotRequired[str]
    too_large: NotRequired[int]


class FilesEvent(TypedDict):
    """The files the cells wrote into the working folder (top level, regular files), as ``nbgrader
    autograde`` keeps them beside the autograded notebook; ``left_out`` names those over the size cap."""

    event: Literal["files"]
    files: dict[str, str]  # name -> content, base64
    left_out: list[str]


class ExitEvent(TypedDict):
    """How one job's process ended, written by the serving driver on its control pipe (which no job's
    process holds, so learner code cannot forge it): ``exitcode`` as :func:`os.waitstatus_to_exitcode`
    gives it, negative for a signal."""

    event: Literal["exit"]
    job: str
    exitcode: int


Event = StartEvent | CellStartEvent | CellEvent | CheckEvent | DoneEvent | ProblemEvent | FilesEvent | ExitEvent

# --------------------------------------------------------------------------
# The result of one submission
# --------------------------------------------------------------------------


class CellResult(TypedDict):
    """One graded cell: its points, the score (None: to grade by hand) and the check's message."""

    points: float
    score: float | None
    message: str
    passed: NotRequired[bool | None]  # absent when nothing ran (missing, not a notebook)
    by_hand: NotRequired[bool]  # the score is the instructor's, from the formgrader (classgrader.books.hand_grades)


class SandboxSummary(TypedDict):
    """How the scoring run in the sandbox ended (for the record)."""

    returncode: int | None
    signal: int | None
    timed_out: bool
    result_overflow: bool
    seconds: float
    log: str  # its last 4000 characters of raw output
    events: int
    mode: NotRequired[str]  # the sandbox mode: root, userns, none (see classgrader.sandbox.mode)


class Late(TypedDict):
    """What lateness costs one submission (see :func:`classgrader.after_deadline.late.assess`)."""

    submitted_at: str | None  # ISO 8601 in UTC
    source: str | None  # where the time came from
    deadline: str | None  # ISO 8601 in UTC
    seconds_late: float | None  # None: late by the LMS's word, time unknown
    periods: int
    penalty: float  # points
    raw_score: float
    final_score: float
    status: str  # on_time, in_grace, late, late_no_time, no_time, unreadable, no_deadline, missing
    note: str
    timezone: NotRequired[str]  # the policy's zone, in which the feedback page shows the times
    extension: NotRequired[float]  # seconds: nbgrader's per-student extension, added to the deadline


class Result(TypedDict):
    """Everything about one graded submission (``results/<student>.json``)."""

    # who and what
    student: str
    assignment: str
    notebook: str  # the notebook's stem, nbgrader's notebook name
    display_name: str
    timestamp: str | None  # the submission time as the submission recorded it
    submitted_file: str
    layout: str  # nbgrader, canvas, moodle, blackboard, file, folder, roster
    ignored_files: list[str]
    key: str  # file hash + assignment key: an unchanged submission is not graded again
    sha256: NotRequired[str]  # of the submitted file
    seed: NotRequired[int]  # the hidden checks' seed
    # the outcome
    status: Status
    max_score: float
    score: float  # before any late penalty
    cells: dict[str, CellResult]  # grade_id -> cell
    comments: dict[str, str | None]  # answer grade_id -> nbgrader's auto comment
    notes: list[str]  # sentences for the instructor and the learner
    repairs: dict[str, list[str]]  # what the matching repaired: kind -> details
    flagged: list[str]  # grade_ids where the in-kernel run gave more points
    in_kernel: dict[str, str]  # grade_id -> the in-kernel run's verdict
    sandbox: SandboxSummary | dict[str, Any]  # {} when nothing ran
    cell_seconds: NotRequired[dict[str, float | None]]  # plan index -> seconds
    notebooks: NotRequired[
        list[str]
    ]  # a plain nbgrader assignment's notebook stems (classgrader.assignments.plain_nbgrader)
    manual: NotRequired[list[str]]  # grade_ids left for the formgrader (classgrader.assignments.plain_nbgrader)
    late: NotRequired[Late]
    hand_comments: NotRequired[dict[str, str]]  # answer grade_id -> the instructor's comment (formgrader); reports only
    graded_at: NotRequired[str]  # ISO 8601, when the result was saved


def new_result(
    *,
    student: str,
    assignment: str,
    notebook: str,
    display_name: str,
    timestamp: str | None,
    submitted_file: str,
    layout: str,
    ignored_files: list[str],
    max_score: float,
    key: str,
    status: Status,
) -> Result:
    """A result with nothing graded yet: score 0, no cells, no notes."""
    return Result(
        student=student,
        assignment=assignment,
        notebook=notebook,
        display_name=display_name,
        timestamp=timestamp,
        submitted_file=submitted_file,
        layout=layout,
        ignored_files=ignored_files,
        key=key,
        status=status,
        max_score=max_score,
        score=0.0,
        cells={},
        comments={},
        notes=[],
        repairs={},
        flagged=[],
        in_kernel={},
        sandbox={},
    )


def read_result(path: Path) -> Result | None:
    """A saved result, or None if the file is missing, unreadable or not a JSON object.

    It is read as saved, by this version of the grader or an earlier one:
    check the keys you need (``status`` and ``key`` before reusing it).
    """
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return cast(Result, data) if isinstance(data, dict) else None


# --------------------------------------------------------------------------
# Atomic writers: a reader sees the old file or the new one, never half of one
# --------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` (same suffix) that replaces ``path`` when the block succeeds.

    The file is readable by all (0644); on any error it is removed and
    ``path`` is left as it was.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.fchmod(fd, 0o644)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """``data`` as indented JSON with sorted keys, synced to disk before it replaces ``path``."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True, default=str)
        fh.flush()
        os.fsync(fh.fileno())


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """``data`` in place of ``path``."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` (UTF-8) in place of ``path``."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
