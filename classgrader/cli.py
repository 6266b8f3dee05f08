"""``./course grade ASSIGNMENT SUBMISSIONS`` (or ``python -m classgrader``).

``./course grade ASSIGNMENT --analyse-only`` writes the item analysis of an
assignment already graded (from the gradebook and the results), grading nothing.

The options for the course's settings (the limits, the sandbox mode, the late
policy, the LMS files) are made from their declarations in :mod:`classgrader.settings`
(name, help, type, default): each overrides its line of the course's
``nbgrader_config.py`` for one run. The other options say what this run grades
and how; a new one goes in the ``_add_*`` function of its kind.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from traitlets import Bool, TraitType
from traitlets.config import Configurable

from classgrader import sandbox, settings
from classgrader.after_deadline import late
from classgrader.assignments.course import SetupError, known_assignments, unknown_message
from classgrader.books import lms_export
from classgrader.books.class_reports import summary_text
from classgrader.pipeline import intake, preview
from classgrader.records import STATUSES
from classgrader.setting_values import Setting
from classgrader.settings import ClassGrader, ConfigError, CourseGrading, CourseSettings, LatePolicy, LmsExport
from classgrader.stages.grade import Settings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="course grade",
        description="Grade every submission of one assignment: in parallel, each in a sandbox, "
        "scored outside the learner's process, written to nbgrader's gradebook.",
        epilog="Each submission ends with one status: "
        + ", ".join(STATUSES)
        + ". The instructors' guide (./course solutions: The class grader in detail) explains them, "
        "the accepted file names and the sandbox. Options marked c.CLASS.NAME override that setting of the "
        "course's nbgrader_config.py for one run.",
    )
    _add_inputs(p)
    _add_run_options(p)
    _add_settings(p, ClassGrader)
    _add_after_deadline(p)
    return p


def _add_inputs(p: argparse.ArgumentParser) -> None:
    """What is graded and where the results go."""
    p.add_argument("assignment", help="assignment name, e.g. hw2_stable_softmax")
    p.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        help="nbgrader's submitted/ folder (or the course folder), a flat folder, or a zip from an LMS "
        "(not needed with --analyse-only)",
    )
    p.add_argument(
        "--course",
        type=Path,
        default=Path("."),
        help="course folder with solutions/ and exercises/ (default: current folder)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where autograded/, feedback/, reports/ and the default gradebook go (default: --course)",
    )
    p.add_argument(
        "--db",
        dest="db_url",
        default=None,
        help="gradebook URL: sqlite:///path/gradebook.db (default: OUT/gradebook.db) "
        "or postgresql://user@host:port/dbname",
    )
    p.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="file with one student id per line (or CSV with an id column first): "
        "students without a submission are reported missing",
    )
    _add_settings(p, LmsExport)


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """How this run grades (not course settings: nothing in nbgrader_config.py)."""
    p.add_argument(
        "--workers",
        "-j",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel workers (default: number of cores, %(default)s here)",
    )
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        default=None,
        help="grade on the workers of a running Dask scheduler, e.g. tcp://host:8786 (--workers does "
        "not apply); this machine still writes the gradebook and every file. The instructors' "
        "guide (./course solutions: Grading on a cluster) says how to provision workers",
    )
    p.add_argument("--regrade", action="store_true", help="grade again even unchanged, already graded submissions")
    p.add_argument(
        "--preview",
        action="store_true",
        help="grade again into a scratch folder and print whose grade a --regrade would change, and why; "
        "writes nothing",
    )
    p.add_argument(
        "--no-kernel-record",
        action="store_true",
        help="skip the second sandboxed run that records the in-kernel (nbgrader-style) test results",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run learner code WITHOUT isolation (trusted code only, e.g. to try the tool)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _add_after_deadline(p: argparse.ArgumentParser) -> None:
    a = p.add_argument_group(
        "after the deadline",
        "The late policy comes from c.LatePolicy in the course's nbgrader_config.py; these options override it "
        "for one run. A time without a zone is taken in --timezone. The instructors' guide "
        "(./course solutions: The homework and its grading, After the deadline) has the rules.",
    )
    _add_settings(a, LatePolicy)
    a.add_argument(
        "--timestamps",
        type=Path,
        default=None,
        help="CSV with columns student_id,submitted_at: submission times that win over the files' own "
        "(for a Moodle export, which records none)",
    )
    a.add_argument(
        "--analyse-only",
        action="store_true",
        help="grade nothing: write the item analysis (pass rate, common messages and score histogram "
        "per graded cell) of what is already graded into reports/ASSIGNMENT/",
    )


def _add_settings(group: argparse._ActionsContainer, cls: type[Configurable]) -> None:
    """An option for each trait of ``cls`` tagged ``option=True``: its help, type and default.

    The option is ``--NAME`` (``_`` written ``-``), or the trait's
    ``option_name`` tag (its value's name in the help: the ``metavar`` tag, or
    the trait's own); a ``Bool`` is an option with no value (it sets True).
    The option's value is stored under ``"Class.trait"`` (None when not
    given, so that the course's nbgrader_config.py decides).
    """
    for name, trait in vars(cls).items():
        if not (isinstance(trait, TraitType) and trait.metadata.get("option")):
            continue
        option = "--" + trait.metadata.get("option_name", name.replace("_", "-"))
        if isinstance(trait, Bool):
            group.add_argument(
                option, dest=f"{cls.__name__}.{name}", action="store_true", default=None, help=_help(cls, name, trait)
            )
            continue
        values = getattr(trait, "values", None)
        group.add_argument(
            option,
            dest=f"{cls.__name__}.{name}",
            type=_checked(cls, name),
            choices=values,
            metavar=None if values else trait.metadata.get("metavar", getattr(trait, "metavar", "TEXT")),
            default=None,
            help=_help(cls, name, trait),
        )


def _help(cls: type[Configurable], name: str, trait: TraitType[Any, Any]) -> str:
    default = trait.default_value
    where = f"c.{cls.__name__}.{name} in nbgrader_config.py"
    if default is not None and not isinstance(default, bool):  # a flag's help says what not giving it means
        shown = (
            trait.shown(default)
            if isinstance(trait, Setting)
            else f"{default:g}"
            if isinstance(default, float)
            else default
        )
        where = f"default {shown}; {where}"
    return f"{trait.help} ({where})".replace("%", "%%")  # argparse formats help with %


def _checked(cls: type[Configurable], name: str) -> Any:
    """argparse's ``type`` for the option of ``cls.name``: what the text stands for, once the trait has read it.

    The text is read as traitlets reads a command line's (the trait's ``from_string``).
    """
    trait = cls.class_traits()[name]

    def check(text: str) -> Any:
        try:
            value = trait.from_string(text)
            settings.check(cls, name, value)
        except (ValueError, ConfigError) as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{cls.__name__}.{name} ")) from None
        return trait.command_line_value(text) if isinstance(trait, Setting) else value

    check.__name__ = name
    return check


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """``{"Class.trait": value}`` of the course settings given on the command line."""
    return {key: value for key, value in vars(args).items() if "." in key and value is not None}


def read_roster(path: Path) -> list[str]:
    ids = []
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        first = line.split(",")[0].strip().strip('"')
        if first and not first.startswith("#") and first.lower() not in ("id", "student_id", "student"):
            ids.append(first)
    return ids


class _Refused(Exception):
    """The run cannot start; the message says why (printed after "classgrader: ")."""


@dataclasses.dataclass
class _Prepared:
    """What a grading run needs beyond its options: the course's settings, read and checked."""

    settings: CourseSettings
    policy: late.Policy
    timestamps: dict[str, str] | None
    lms: lms_export.LmsOptions
    made_secret: str | None  # what to tell the instructor when this run made the course secret


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.assignment not in known_assignments(args.course):
        print(f"classgrader: {unknown_message(args.course, args.assignment)}", file=sys.stderr)
        return 2
    if args.analyse_only:
        return _analyse_only(args)
    if args.submissions is None:
        p.error("the submissions folder or zip is required (unless --analyse-only)")
    if args.preview and args.regrade:
        p.error("--preview shows what --regrade would do: give one or the other")
    try:
        prepared = _prepare(args)
    except _Refused as exc:
        print(f"classgrader: {exc}", file=sys.stderr)
        return 2
    if prepared.made_secret:
        print(prepared.made_secret, file=sys.stderr)
    from classgrader import privacy

    opened = privacy.warning(args.course, args.out or args.course)
    if opened:
        print(opened, file=sys.stderr)
    return _grade(args, prepared)


def _prepare(args: argparse.Namespace) -> _Prepared:
    """The course's settings with the command line's on top, the late policy, the LMS options, the secret."""
    from classgrader.assignments import secret
    from sdpa_course.grading import seeds

    try:
        course = settings.read(args.course, overrides(args))
    except ConfigError as exc:
        raise _Refused(str(exc)) from None
    try:
        policy = late.policy_of(course.late, args.assignment)
        timestamps = late.read_timestamps_file(args.timestamps) if args.timestamps else None
    except (late.LatePolicyError, OSError) as exc:
        raise _Refused(f"late policy: {exc}") from None
    try:
        lms = lms_export.options_of(course.lms, args.course, args.assignment)
    except lms_export.MappingError as exc:
        raise _Refused(str(exc)) from None
    try:
        named, made = secret.ensure_secret(args.course, course.course_id, course.grading.secret_file)
    except (OSError, seeds.SecretMissing) as exc:
        raise _Refused(f"the course secret: {exc}") from None
    if made:  # the run goes on with the secret it just recorded in nbgrader_config.py
        course = dataclasses.replace(course, grading=CourseGrading(secret_file=named))
    return _Prepared(course, policy, timestamps, lms, made)


def _grade(args: argparse.Namespace, prepared: _Prepared) -> int:
    from classgrader.pipeline.class_run import grade_class

    grader = prepared.settings.grader
    run_settings = Settings(
        limits=sandbox.Limits(wall_seconds=grader.timeout, memory_bytes=grader.memory),
        sandboxed=not args.no_sandbox,
        sandbox_mode=grader.sandbox,
        kernel_record=not args.no_kernel_record,
    )
    if args.no_sandbox:
        print(
            "classgrader: WARNING: --no-sandbox runs learner code with your rights, next to your files", file=sys.stderr
        )
    options: dict[str, Any] = {
        "workers": args.workers,
        "settings": run_settings,
        "course_settings": prepared.settings,
        "roster": read_roster(args.roster) if args.roster else None,
        "progress": False if args.quiet else None,
        "log": lambda msg: print(msg, file=sys.stderr),
        "late_policy": prepared.policy,
        "timestamps": prepared.timestamps,
        "cluster": args.cluster,
        "lms": prepared.lms,
    }
    try:
        if args.preview:
            out = (args.out or args.course).resolve()
            shown = preview.preview(args.course, args.assignment, args.submissions, out, analyse=False, **options)
            print(preview.text(shown))
            return 0
        summary = grade_class(
            args.course,
            args.assignment,
            args.submissions,
            out=args.out,
            db_url=args.db_url,
            regrade=args.regrade,
            **options,
        )
    except KeyboardInterrupt:
        return 130
    except (SetupError, intake.IntakeError, sandbox.SandboxUnavailable) as exc:
        print(f"classgrader: {exc}", file=sys.stderr)
        return 2
    print(summary_text(summary))
    print(f"reports: {summary['reports']}")
    return 0


def _analyse_only(args: argparse.Namespace) -> int:
    from classgrader.after_deadline import item_analysis
    from classgrader.books import gradebook

    out = (args.out or args.course).resolve()
    db_url = gradebook.normalise_url(args.db_url or gradebook.sqlite_url(out / "gradebook.db"))
    if not args.db_url and not (out / "gradebook.db").is_file():
        print(
            f"classgrader: no gradebook at {out / 'gradebook.db'}: grade the assignment first, or give --db",
            file=sys.stderr,
        )
        return 2
    reports_dir = out / "reports" / args.assignment
    try:
        analysis = item_analysis.write(
            db_url,
            settings.read(args.course.resolve()).course_id,
            args.assignment,
            reports_dir,
            order=item_analysis.release_order(args.course, args.assignment),
        )
    except (item_analysis.AnalysisError, ConfigError) as exc:
        print(f"classgrader: {exc}", file=sys.stderr)
        return 2
    print(item_analysis.table_text(analysis))
    print(f"reports: {reports_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
