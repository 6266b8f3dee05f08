"""What is graded in a *plain* nbgrader assignment: one the instructor wrote the way nbgrader's docs teach.

Such an assignment has no checks in :mod:`grading`: its instructor source
(``solutions/<name>/``) holds one or several notebooks with solution cells and
autograded test cells (asserts, hidden tests between nbgrader's
``### BEGIN HIDDEN TESTS`` markers), maybe manually graded cells, and the data
files the notebooks read; its release (``exercises/<name>/``) is what
``nbgrader generate_assignment`` made of it (``./course release <name>``).
:func:`load` reads both into an :class:`~classgrader.assignments.course.AssignmentInfo`
whose ``kind`` is a :class:`PlainKind` (its notebooks and data files); the
stages of :mod:`classgrader.stages.plain_grade` grade a submission of it, each
test cell as ``nbgrader autograde`` scores it.

Its tests are the instructor's own asserts, so they run *inside* the learner's
process: :data:`THREAT_MODEL` says what that costs and what still holds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

import nbformat

from classgrader.assignments.errors import SetupError
from nbgrader_tools.cells import nbgrader_meta
from nbgrader_tools.content_hash import text_hash

#: What grading a plain assignment guarantees and what it does not (the summary and the docs say it).
THREAT_MODEL = (
    "plain nbgrader assignment: its test cells are asserts that run inside the learner's own process, as "
    "`nbgrader autograde` runs them, so the learner's code can reach them (redefine a function the tests "
    "call, patch a module they import, or end a test cell with a forged number). What still holds: every "
    "test cell is the one nbgrader's generate_assignment recorded from the instructor's source, hidden "
    "tests included and autotests expanded (an edited, duplicated or deleted "
    "test cell is detected by its nbgrader grade_id and by comparing its text with the release, reported, "
    "and replaced); each notebook runs in the sandbox (no network, an unprivileged user, none of the "
    "instructor's files: not the solutions, the gradebook or other submissions) within the time and memory "
    "limits; manually graded cells are left for the formgrader. The course's own assignments do not have "
    "this weakness: their checks compare plain results outside the learner's process"
)


#: Manually graded cells, as the result and the feedback name them.
MANUAL = "needs manual grading (in nbgrader's formgrader)"


@dataclasses.dataclass
class PlainNotebook:
    """One notebook of a plain assignment: its release and source, and its graded cells."""

    name: str  # file name, e.g. part1_data.ipynb
    release: nbformat.NotebookNode
    source: nbformat.NotebookNode
    grade_cells: dict[str, float]  # grade_id -> points, in notebook order
    manual: list[str]  # grade_ids of manually graded answers (solution and grade)
    #: test cell grade_id -> the cell as nbgrader recorded it (autotests expanded, hidden tests included);
    #: filled by :func:`with_recorded_tests` once the run's gradebook holds the record
    tests: dict[str, str]
    #: grade ids that another notebook of the assignment uses too (nbgrader keeps grade ids per notebook)
    shared: frozenset[str] = frozenset()

    @property
    def stem(self) -> str:
        return Path(self.name).stem

    def key(self, gid: str) -> str:
        """The cell's name in the assignment's result: its grade id, or ``<notebook stem>/<grade id>`` for
        an id that another notebook uses too."""
        return f"{self.stem}/{gid}" if gid in self.shared else gid


@dataclasses.dataclass(frozen=True)
class PlainKind:
    """A plain assignment, as :class:`~classgrader.assignments.course.AssignmentInfo` holds it: its notebooks
    and the release's data files. Its interface is :class:`~classgrader.assignments.course.CourseKind`'s."""

    notebooks: list[PlainNotebook]
    data_files: dict[str, Path]  # the release's files beside the notebooks, by name
    threat_model: ClassVar[str | None] = THREAT_MODEL
    #: Its test cells come from nbgrader's record of the source, so the record follows the source each run.
    refresh_record: ClassVar[bool] = True

    def notebook_names(self) -> list[str]:
        return [nb.name for nb in self.notebooks]

    def cluster_refusal(self, name: str) -> str | None:
        return f"{name} is a plain nbgrader assignment: it is graded on this machine only (no --cluster)"

    def recorded(self, name: str, db_url: str, course_id: str) -> PlainKind:
        """This kind with its test cells as the gradebook recorded them (:func:`with_recorded_tests`)."""
        return dataclasses.replace(self, notebooks=with_recorded_tests(self.notebooks, name, db_url, course_id))

    def checks_hash(self, name: str) -> str:
        """What decides its scores besides the submission: each notebook's recorded test cells."""
        return text_hash({nb.name: nb.tests for nb in self.notebooks})

    def submitted_bytes(self, path: Path) -> bytes:
        """What a submission's key covers: the notebook at ``path``, or each notebook found beside it."""
        if len(self.notebooks) < 2:
            return path.read_bytes()
        parts = []
        for nb in self.notebooks:
            found = path.parent / nb.name
            parts.append(nb.name.encode() + b"\0" + (found.read_bytes() if found.is_file() else b"(missing)"))
        return b"\0".join(parts)


def is_plain(course: Path, name: str) -> bool:
    """Whether ``name`` is a plain assignment: a release and an instructor source, and no checks in grading."""
    from sdpa_course import grading

    return (
        name not in grading.ASSIGNMENTS
        and (course / "exercises" / name).is_dir()
        and any((course / "solutions" / name).glob("*.ipynb"))
    )


def plain_assignments(course: Path) -> list[str]:
    """The plain assignments of ``course`` that can be graded (released, with their source)."""
    released = (course / "exercises").glob("*") if (course / "exercises").is_dir() else []
    return sorted(p.name for p in released if p.is_dir() and is_plain(course, p.name))


def read_notebooks(course: Path, name: str) -> list[PlainNotebook]:
    """Every notebook of the release with its instructor source; a clear error for what does not fit."""
    release_dir, source_dir = course / "exercises" / name, course / "solutions" / name
    names = sorted(p.name for p in release_dir.glob("*.ipynb"))
    if not names:
        raise SetupError(f"{release_dir} holds no notebook: run ./course release {name}")
    out: list[PlainNotebook] = []
    owner: dict[str, list[str]] = {}  # grade id -> the notebooks that use it
    for nb_name in names:
        if not (source_dir / nb_name).is_file():
            raise SetupError(f"{source_dir / nb_name} is missing (the instructor source of {nb_name})")
        release = nbformat.read(release_dir / nb_name, as_version=4)
        source = nbformat.read(source_dir / nb_name, as_version=4)
        grade_cells: dict[str, float] = {}
        manual: list[str] = []
        for cell in release.cells:
            meta = nbgrader_meta(cell)
            gid = meta.get("grade_id")
            if not meta.get("grade") or not gid:
                continue
            if gid in grade_cells:  # nbgrader refuses it too (CheckCellMetadata)
                raise SetupError(
                    f"grade_id {gid!r} is twice in {nb_name}: give each graded cell of {name} an ID of its own "
                    "(nbgrader's Create Assignment toolbar, 'ID')"
                )
            owner.setdefault(gid, []).append(nb_name)
            grade_cells[gid] = float(meta.get("points", 0) or 0)
            if meta.get("solution"):
                manual.append(gid)
        out.append(PlainNotebook(nb_name, release, source, grade_cells, manual, {}))
    shared = frozenset(gid for gid, names in owner.items() if len(names) > 1)
    return [dataclasses.replace(nb, shared=shared) for nb in out]


def with_recorded_tests(notebooks: list[PlainNotebook], name: str, db_url: str, course_id: str) -> list[PlainNotebook]:
    """``notebooks`` with their test cells as nbgrader's ``generate_assignment`` recorded them in the
    gradebook (:mod:`classgrader.books.nbgrader_record`); a clear error for a test cell it did not record."""
    from classgrader.books import nbgrader_record

    out = []
    for nb in notebooks:
        recorded = nbgrader_record.test_cells(db_url, course_id, name, nb.stem)
        tests = {gid: recorded[gid] for gid in nb.grade_cells if gid in recorded and gid not in nb.manual}
        missing = [g for g in nb.grade_cells if g not in nb.manual and g not in tests]
        if missing:
            raise SetupError(
                f"solutions/{name}/{nb.name} has no test cell {', '.join(map(repr, missing))} that its release has: "
                f"release it again (./course release {name})"
            )
        out.append(dataclasses.replace(nb, tests=tests))
    return out


def data_files(course: Path, name: str) -> dict[str, Path]:
    """The release's other files (the data the notebooks read), by name; subfolders are refused."""
    release_dir = course / "exercises" / name
    files = {}
    for path in sorted(release_dir.iterdir()):
        if path.name.startswith(".") or path.suffix == ".ipynb":
            continue
        if path.is_dir():
            raise SetupError(
                f"{path} is a folder: the grader gives the notebooks the files beside them only; "
                "put the assignment's data files next to its notebooks"
            )
        files[path.name] = path
    return files
