"""The class grader's settings: declared once, read from ``nbgrader_config.py`` once per run.

nbgrader's plugins declare their settings as traitlets ``Configurable``
classes, and so does the grader: each class below is a section of the
course's ``nbgrader_config.py`` (``c.LatePolicy.penalty = "10%"``), each
trait one setting with its type, default and help. ``./course grade`` derives
its command-line options from the traits tagged ``option=True``
(:mod:`classgrader.cli`); an option given there wins over the file.

=====================  ==========================================================
``CourseDirectory``    ``course_id``: the one setting of nbgrader's own class
                       that the grader reads (nbgrader declares the rest)
``CourseGrading``      ``secret_file``: the course secret of the hidden tests'
                       seeds (:mod:`grading.seeds`, which the hidden test cells
                       of ``nbgrader autograde`` read it with)
``ClassGrader``        ``timeout``, ``memory``, ``sandbox``: how ``./course grade``
                       runs each submission (defaults: :class:`~classgrader.sandbox.Limits`)
``LatePolicy``         ``deadlines``, ``deadline``, ``timezone``, ``penalty``,
                       ``period``, ``grace``, ``cap``
                       (:mod:`classgrader.after_deadline.late`)
``LmsExport``          ``roster``, ``titles``, ``missing_as_zero``: the grade
                       import files for Canvas and Moodle
                       (:mod:`classgrader.books.lms_export`)
``Feedback``           ``book_url``: the published book, for the feedback's links
                       to its chapters (:mod:`classgrader.stages.report`)
=====================  ==========================================================

:func:`read` reads the file once and checks every section; a grading run
passes the :class:`CourseSettings` it returns to every step. A value that
cannot be read is an error (:class:`ConfigError`) that names the setting and
the file; the value types traitlets has no trait for are in
:mod:`classgrader.setting_values`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from traitlets import Bool, CFloat, TraitError, TraitType, Unicode, validate
from traitlets.config import Config, Configurable
from traitlets.config.loader import LazyConfigValue

from classgrader.sandbox.limits import Limits
from classgrader.sandbox.mode import MODES
from classgrader.setting_values import Address, BadSetting, Choice, Duration, File, PerAssignment, Points, Size, Zone
from sdpa_course.grading.seeds import CONFIG, read_config

PERIODS = {"hour": 3600, "day": 86400}
SANDBOX_MODES = ("auto", *MODES)
#: nbgrader's gradebook calls a course with no ``course_id`` this.
DEFAULT_COURSE_ID = "default_course"


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it and where it was written."""


# --------------------------------------------------------------------------
# The sections of nbgrader_config.py
# --------------------------------------------------------------------------


class CourseDirectory(Configurable):
    """The course id: the one setting of nbgrader's ``CourseDirectory`` that the grader reads.

    nbgrader's own class (``nbgrader.coursedir.CourseDirectory``) declares it
    alike, with its other settings; importing it would import nbgrader.
    """

    course_id = Unicode("", help="A key that is unique per instructor and course.").tag(config=True)

    @validate("course_id")
    def _strip(self, proposal: dict[str, Any]) -> str:
        return str(proposal["value"]).strip()  # as nbgrader does


class CourseGrading(Configurable):
    """The course secret, read by ``./course grade`` and by ``nbgrader autograde``'s hidden test cells."""

    secret_file = Unicode(
        "",
        help="The file holding the course secret that seeds each learner's hidden tests (relative to the course "
        "folder, ~ allowed; never in the repository or a release). Made by the first ./course grade.",
    ).tag(config=True)


class ClassGrader(Configurable):
    """How ``./course grade`` runs each submission: its limits and its sandbox."""

    timeout = CFloat(Limits.wall_seconds, help="wall seconds per submission").tag(
        config=True, option=True, metavar="SECONDS"
    )
    memory = Size(Limits.memory_bytes, help="memory (address space) per submission, e.g. 1g, 512m").tag(
        config=True, option=True
    )
    sandbox = Choice(
        SANDBOX_MODES,
        "auto",
        help="how each sandbox is built: root (as root, learner code as a spare uid), userns (bubblewrap's "
        "unprivileged mode, in a user namespace, for any user) or auto: root mode when run as root, else userns",
    ).tag(config=True, option=True)

    @validate("timeout")
    def _positive(self, proposal: dict[str, Any]) -> float:
        seconds = float(proposal["value"])
        if not 0 < seconds < float("inf"):
            raise BadSetting("ClassGrader.timeout", f"must be a number of seconds above 0, not {proposal['value']!r}")
        return seconds


class LatePolicy(Configurable):
    """The deadline and what lateness costs (:mod:`classgrader.after_deadline.late`)."""

    deadlines = PerAssignment(
        "deadlines",
        "2026-03-01 23:59",
        help="each assignment's deadline, e.g. {'hw2_stable_softmax': '2026-03-01 23:59'}",
    ).tag(config=True)
    deadline = Unicode(
        None,
        allow_none=True,
        help="this run's deadline, e.g. '2026-03-01 23:59' or '2026-03-01T23:59:00+01:00', instead of the "
        "assignment's entry in deadlines",
    ).tag(config=True, option=True)
    timezone = Zone(
        "UTC",
        help="the time zone (an IANA name such as Europe/Berlin, or UTC as nbgrader assumes) of deadlines and "
        "submission times written without one",
    ).tag(config=True, option=True)
    penalty = Points(
        "0", help="penalty per started period late: points (e.g. 1) or percent of the maximum (e.g. 10%)"
    ).tag(config=True, option=True)
    period = Choice(tuple(sorted(PERIODS)), "day", prefix="per ", help="the penalty's period").tag(
        config=True, option=True
    )
    grace = Duration("0", help="lateness that costs nothing, e.g. 15m, 2h").tag(config=True, option=True)
    cap = Points(
        None, allow_none=True, help="the most a late submission can lose, points or percent; no cap when unset"
    ).tag(config=True, option=True)


class LmsExport(Configurable):
    """The grade import files for Canvas and Moodle (:mod:`classgrader.books.lms_export`)."""

    roster = File(
        None,
        allow_none=True,
        help="CSV mapping student ids to LMS ids (columns student_id,canvas_id,name,sis_user_id,sis_login_id,"
        "section,email,id_number) for canvas_import.csv and moodle_import.csv (relative to the course folder "
        "when named in nbgrader_config.py)",
    ).tag(config=True, option=True, option_name="lms-roster")  # --roster is the class roster
    titles = PerAssignment(
        "column titles",
        "Homework 2",
        help="each assignment's column title in the LMS files, e.g. {'hw2_stable_softmax': 'Homework 2'} "
        "(default: the assignment's name)",
    ).tag(config=True)
    missing_as_zero = Bool(
        False, help="in the LMS files, 0 for a student with no submission (default: an empty cell, no grade)"
    ).tag(config=True, option=True)


class Feedback(Configurable):
    """The learner's feedback page (:mod:`classgrader.stages.report`).

    nbgrader has a deprecated converter of this name, which none of its
    commands makes any more; the course's section holds only its own setting.
    """

    book_url = Address(
        None,
        allow_none=True,
        help="the published book's address: the feedback's links to chapters lead to chapters/<name>.html "
        "below it (plain text naming the chapter when unset)",
    ).tag(config=True)


SECTIONS: tuple[type[Configurable], ...] = (
    CourseDirectory,
    CourseGrading,
    ClassGrader,
    LatePolicy,
    LmsExport,
    Feedback,
)
S = TypeVar("S", bound=Configurable)


# --------------------------------------------------------------------------
# The reader
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CourseSettings:
    """Every section of one course's ``nbgrader_config.py``, checked, with the command line's values on top."""

    directory: CourseDirectory
    grading: CourseGrading
    grader: ClassGrader
    late: LatePolicy
    lms: LmsExport
    feedback: Feedback
    #: The whole file as traitlets read it, for nbgrader's own apps (``generate_assignment``) to read their sections.
    nbgrader: Config = dataclasses.field(default_factory=Config)

    @property
    def course_id(self) -> str:
        return self.directory.course_id or DEFAULT_COURSE_ID


def problem(cls: type[Configurable], name: str, value: Any, exc: TraitError) -> str:
    """What is wrong with ``value`` for ``cls.name``, naming the setting (``Class.trait must be ..., not ...``)."""
    if isinstance(exc, BadSetting):
        return str(exc)
    trait: TraitType[Any, Any] = cls.class_traits()[name]
    return f"{cls.__name__}.{name} must be {trait.info()}, not {value!r}"


def _set(obj: Configurable, name: str, value: Any, where: str) -> None:
    if isinstance(value, LazyConfigValue):  # c.LatePolicy.deadlines.update({...}) in the file
        value = value.get_value(getattr(obj, name))
    try:
        setattr(obj, name, value)
    except TraitError as exc:
        raise ConfigError(f"{problem(type(obj), name, value, exc)}{' ' * bool(where)}{where}") from None


def section(config: Config, cls: type[S], overrides: Mapping[str, Any] | None = None, *, where: str = "") -> S:
    """The section ``cls`` of ``config``, then ``overrides`` (``{trait: value}``, from the command line) on top.

    ``where`` (e.g. ``"in course/nbgrader_config.py"``) ends the message of a
    bad value from ``config``. Raises :class:`ConfigError`.
    """
    name = cls.__name__
    given = dict(config[name]) if name in config else {}
    known = cls.class_trait_names(config=True)
    unknown = sorted(set(given) - set(known))
    if unknown and cls is not CourseDirectory:  # nbgrader declares the rest of that one
        raise ConfigError(
            f"unknown {name} setting(s) {', '.join(unknown)}{' ' * bool(where)}{where}; known: {', '.join(known)}"
        )
    obj = cls()
    for trait in known:  # one by one, so that an error names the setting that is wrong
        if trait in given:
            _set(obj, trait, given[trait], where)
    for trait, value in (overrides or {}).items():
        if trait not in known:
            raise ConfigError(f"unknown {name} setting {trait}; known: {', '.join(known)}")
        _set(obj, trait, value, "")
    return obj


def read(course: Path, overrides: Mapping[str, Any] | None = None) -> CourseSettings:
    """Every section of the course's ``nbgrader_config.py``, with ``overrides`` on top.

    ``overrides`` maps ``"Class.trait"`` to a value (``None`` values are
    skipped: an option not given). Raises :class:`ConfigError`.
    """
    config = read_config(course)
    where = f"in {Path(course) / CONFIG}"
    mine: dict[str, dict[str, Any]] = {cls.__name__: {} for cls in SECTIONS}
    for key, value in (overrides or {}).items():
        cls_name, _, trait = key.partition(".")
        if cls_name not in mine:
            raise ConfigError(f"unknown section {cls_name} in {key}; known: {', '.join(mine)}")
        if value is not None:
            mine[cls_name][trait] = value

    def part(cls: type[S]) -> S:
        return section(config, cls, mine[cls.__name__], where=where)

    return CourseSettings(
        part(CourseDirectory),
        part(CourseGrading),
        part(ClassGrader),
        part(LatePolicy),
        part(LmsExport),
        part(Feedback),
        config,
    )


def check(cls: type[Configurable], trait: str, value: Any) -> Any:
    """``value`` as the trait ``cls.trait`` reads it; raises :class:`ConfigError` naming what is wrong."""
    obj = cls()
    _set(obj, trait, value, "")
    return getattr(obj, trait)
