"""What is graded: one assignment's release, instructor source and checks; a submission's cache key.

An assignment is of one of two kinds, each behind the same interface
(:class:`CourseKind`'s methods): a course assignment, whose checks live in
:mod:`grading`, or a plain nbgrader assignment
(:class:`~classgrader.assignments.plain_nbgrader.PlainKind`). What differs
between them (the notebooks, what decides the checks, what a submission's key
covers, the threat model) is asked of ``info.kind``; how a submission of each
is graded, stage by stage, is :mod:`classgrader.stages.grade`'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import ClassVar

import nbformat

from classgrader.assignments import plain_nbgrader
from classgrader.assignments.errors import SetupError as SetupError
from classgrader.settings import CourseSettings
from classgrader.settings import read as read_course_settings
from nbgrader_tools.cells import nbgrader_meta
from nbgrader_tools.content_hash import files_hash
from sdpa_course.grading.check import Check


@dataclasses.dataclass(frozen=True)
class CourseKind:
    """A course assignment: one notebook, whose checks in :mod:`grading` judge plain results outside the
    learner's process."""

    notebook: str  # file name, e.g. hw2_stable_softmax.ipynb
    threat_model: ClassVar[str | None] = None  # the summary's: nothing to add to the course's own
    #: Whether the gradebook's record of the source is renewed each run (its checks do not come from it).
    refresh_record: ClassVar[bool] = False

    def notebook_names(self) -> list[str]:
        """The release's notebooks, by file name."""
        return [self.notebook]

    def cluster_refusal(self, name: str) -> str | None:
        """Why it cannot be graded on a Dask cluster; None: it can."""
        return None

    def recorded(self, name: str, db_url: str, course_id: str) -> CourseKind:
        """This kind once the gradebook holds the assignment's record (nothing to take from it)."""
        return self

    def checks_hash(self, name: str) -> str:
        """What decides its scores besides the submission: grading's shared modules and its own."""
        from sdpa_course import grading

        folder = Path(grading.__file__).parent
        module = grading.ASSIGNMENTS.get(name)
        own = [Path(str(module.__file__))] if module is not None else sorted(folder.glob("hw*.py"))
        shared = [p for p in folder.rglob("*.py") if not p.name.startswith("hw")]
        return files_hash([*shared, *own], folder)

    def submitted_bytes(self, path: Path) -> bytes:
        """What a submission's key covers: the notebook at ``path``."""
        return path.read_bytes()


@dataclasses.dataclass
class AssignmentInfo:
    """One assignment as the grader sees it: its notebooks, checks, graded cells and cache key."""

    name: str
    notebook: str  # file name, e.g. hw2_stable_softmax.ipynb
    release: nbformat.NotebookNode
    source: nbformat.NotebookNode
    source_dir: Path  # the folder holding solutions/<assignment>
    checks: list[Check]
    grade_cells: dict[str, float]  # grade_id -> points, in notebook order
    grading_dir: Path
    lib_dir: Path
    kind: CourseKind | plain_nbgrader.PlainKind  # what differs between the two kinds of assignment
    #: The hash of everything that decides a raw score; set by the class run
    #: (:mod:`classgrader.pipeline.fingerprint`), which alone knows the limits and sandbox settings.
    key: str = ""
    secret: bytes = b""
    secret_source: str = ""
    book_url: str | None = None  # the published book, for the feedback's links to its chapters

    @property
    def max_score(self) -> float:
        return float(sum(self.grade_cells.values()))


def load_assignment(course: Path, name: str, course_settings: CourseSettings | None = None) -> AssignmentInfo:
    """Read the release, the instructor source and the checks of one assignment.

    ``course_settings`` are the course's, as the run read them (read here when not given).
    """
    from sdpa_course import grading, lib

    if course_settings is None:
        course_settings = read_course_settings(course)

    release_dir = course / "exercises" / name
    source_dir = course / "solutions" / name
    if name not in known_assignments(course):
        raise SetupError(unknown_message(course, name))
    if plain_nbgrader.is_plain(course, name):
        return _load_plain(course, name, course_settings)
    for folder, what in ((release_dir, "release (student version)"), (source_dir, "instructor source")):
        if not folder.is_dir():
            raise SetupError(f"no {what} for {name!r}: {folder} does not exist")
    release_nbs = sorted(release_dir.glob("*.ipynb"))
    if len(release_nbs) != 1:
        raise SetupError(f"{release_dir} must hold exactly one notebook; it holds {len(release_nbs)}")
    nb_name = release_nbs[0].name
    if not (source_dir / nb_name).is_file():
        raise SetupError(f"{source_dir / nb_name} is missing (the instructor source of {nb_name})")
    release = nbformat.read(release_nbs[0], as_version=4)
    source = nbformat.read(source_dir / nb_name, as_version=4)
    try:
        checks = grading.checks_for(name)
    except KeyError as exc:
        raise SetupError(str(exc)) from None
    grade_cells = {}
    for cell in release.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and meta.get("grade_id"):
            grade_cells[meta["grade_id"]] = float(meta.get("points", 0) or 0)
    secret, secret_source = _secret(course, course_settings)
    return AssignmentInfo(
        name=name,
        notebook=nb_name,
        release=release,
        source=source,
        source_dir=course / "solutions",
        checks=checks,
        grade_cells=grade_cells,
        grading_dir=Path(grading.__file__).parent,
        lib_dir=Path(lib.__file__).parent,
        kind=CourseKind(nb_name),
        secret=secret,
        secret_source=secret_source,
        book_url=course_settings.feedback.book_url,
    )


def _secret(course: Path, course_settings: CourseSettings) -> tuple[bytes, str]:
    """The course secret and where it came from."""
    from sdpa_course.grading import seeds

    try:
        return seeds.course_secret(course, course_settings.grading.secret_file)
    except seeds.SecretMissing as exc:
        raise SetupError(str(exc)) from None


def _load_plain(course: Path, name: str, course_settings: CourseSettings) -> AssignmentInfo:
    """A plain nbgrader assignment (:mod:`classgrader.assignments.plain_nbgrader`): its notebooks and data files."""
    from sdpa_course import lib

    notebooks = plain_nbgrader.read_notebooks(course, name)
    secret, secret_source = _secret(course, course_settings)
    first = notebooks[0]
    return AssignmentInfo(
        name=name,
        notebook=first.name,
        release=first.release,
        source=first.source,
        source_dir=course / "solutions",
        checks=[],
        grade_cells={nb.key(gid): pts for nb in notebooks for gid, pts in nb.grade_cells.items()},
        grading_dir=Path(lib.__file__).parent.parent / "grading",
        lib_dir=Path(lib.__file__).parent,
        kind=plain_nbgrader.PlainKind(notebooks, plain_nbgrader.data_files(course, name)),
        secret=secret,
        secret_source=secret_source,
        book_url=course_settings.feedback.book_url,
    )


def known_assignments(course: Path) -> list[str]:
    """The assignments this course can grade: a release in ``exercises/`` and either checks in ``grading``
    or, for a plain nbgrader assignment (:mod:`classgrader.assignments.plain_nbgrader`), its instructor source
    in ``solutions/``."""
    from sdpa_course import grading

    released = {p.name for p in (course / "exercises").glob("*") if p.is_dir()}
    return sorted((released & set(grading.ASSIGNMENTS)) | set(plain_nbgrader.plain_assignments(course)))


def unknown_message(course: Path, name: str) -> str:
    """Why ``name`` cannot be graded, naming the assignments that can (the likely ones first)."""
    known = known_assignments(course)
    hint = ""
    if (course / "solutions" / name).is_dir() and not (course / "exercises" / name).is_dir():
        hint = f" It has a source but no release: run ./course release {name} first."
    if not known:
        return (
            f"no assignment {name!r}: {course / 'exercises'} holds no assignment with checks in sdpa_course/grading/ "
            "or with its instructor source in solutions/." + hint
        )
    close = [k for k in known if k.startswith(name) or (name and name in k)]
    text = f"no assignment {name!r}" + (f"; did you mean {' or '.join(close)}?" if close else ".")
    return text + hint + " Assignments that can be graded here: " + ", ".join(known)


def submission_key(info: AssignmentInfo, data: bytes | None) -> str:
    """The key of one submitted file: unchanged file and fingerprint (``info.key``), unchanged raw score."""
    h = hashlib.sha256(data or b"").hexdigest()[:24]
    return f"{h}-{info.key}"


def key_parts(key: str) -> tuple[str, str]:
    """A submission key's two parts: the submitted file's hash and the fingerprint's key."""
    file_part, _, fingerprint_part = key.partition("-")
    return file_part, fingerprint_part
