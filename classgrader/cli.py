"""``./course grade ASSIGNMENT SUBMISSIONS`` (or ``python -m classgrader``).

``./course grade ASSIGNMENT --analyse-only`` writes the item analysis of an
assignment already graded (from the gradebook and the results), grading nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from classgrader.after_deadline import late
from classgrader.assignments.course import SetupError, known_assignments, unknown_message
from classgrader.books import lms_export
from classgrader.books.class_reports import summary_text
from classgrader.pipeline import intake
from classgrader.records import STATUSES
from classgrader.sandbox import launch as sandbox
from classgrader.stages.grade import Settings


def _size(text: str) -> int:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    t = text.strip().lower().removesuffix("b")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="course grade",
        description="Grade every submission of one assignment: in parallel, each in a sandbox, "
        "scored outside the learner's process, written to nbgrader's gradebook.",
        epilog="Each submission ends with one status: "
        + ", ".join(STATUSES)
        + ". The instructors' guide (./course solutions: The class grader in detail) explains them, "
        "the accepted file names and the sandbox.",
    )
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
    p.add_argument("--timeout", type=float, default=60.0, help="wall seconds per submission (default 60)")
    p.add_argument("--memory", default="2g", help="memory (address space) per submission, e.g. 1g, 512m (default 2g)")
    p.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="file with one student id per line (or CSV with an id column first): "
        "students without a submission are reported missing",
    )
    p.add_argument(
        "--lms-roster",
        type=Path,
        default=None,
        help="CSV mapping student ids to LMS ids (columns student_id,canvas_id,name,sis_user_id,sis_login_id,"
        "section,email,id_number) for canvas_import.csv and moodle_import.csv (default: c.LmsExport.roster)",
    )
    p.add_argument(
        "--missing-as-zero",
        action="store_true",
        default=None,
        help="in the LMS files, 0 for a student with no submission (default: an empty cell, no grade)",
    )
    p.add_argument("--regrade", action="store_true", help="grade again even unchanged, already graded submissions")
    p.add_argument(
        "--no-kernel-record",
        action="store_true",
        help="skip the second sandboxed run that records the in-kernel (nbgrader-style) test results",
    )
    p.add_argument(
        "--sandbox",
        dest="sandbox_mode",
        choices=("auto", "root", "userns"),
        default="auto",
        help="how each sandbox is built: root (as root, learner code as a spare uid), userns (bubblewrap's "
        "unprivileged mode, in a user namespace, for any user) or auto: root mode when run as root, "
        "else userns (default auto)",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run learner code WITHOUT isolation (trusted code only, e.g. to try the tool)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    a = p.add_argument_group(
        "after the deadline",
        "The late policy comes from c.LatePolicy in the course's nbgrader_config.py; these options override it "
        "for one run. A time without a zone is taken in --timezone. The instructors' guide "
        "(./course solutions: The homework and its grading, After the deadline) has the rules.",
    )
    a.add_argument(
        "--deadline",
        default=None,
        help="this assignment's deadline, e.g. '2026-03-01 23:59' or '2026-03-01T23:59:00+01:00'",
    )
    a.add_argument(
        "--timezone",
        default=None,
        help="IANA zone (e.g. Europe/Berlin) for deadlines and submission times written without a zone "
        "(default UTC, as nbgrader)",
    )
    a.add_argument(
        "--penalty",
        default=None,
        help="penalty per started period late: points (e.g. 1) or percent of the maximum (e.g. 10%%)",
    )
    a.add_argument("--period", choices=sorted(late.PERIODS), default=None, help="the penalty's period (default day)")
    a.add_argument("--grace", default=None, help="lateness that costs nothing, e.g. 15m, 2h (default 0)")
    a.add_argument("--cap", default=None, help="the most a late submission can lose, points or percent (default none)")
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
    return p


def read_roster(path: Path) -> list[str]:
    ids = []
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        first = line.split(",")[0].strip().strip('"')
        if first and not first.startswith("#") and first.lower() not in ("id", "student_id", "student"):
            ids.append(first)
    return ids


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    from classgrader.assignments import secret
    from classgrader.pipeline.class_run import course_id_of, grade_class
    from grading import seeds

    if args.assignment not in known_assignments(args.course):
        print(f"classgrader: {unknown_message(args.course, args.assignment)}", file=sys.stderr)
        return 2
    if args.analyse_only:
        return _analyse_only(args)
    if args.submissions is None:
        p.error("the submissions folder or zip is required (unless --analyse-only)")
    try:
        policy = late.policy_for(
            args.course,
            args.assignment,
            {
                "deadline": args.deadline,
                "timezone": args.timezone,
                "penalty": args.penalty,
                "period": args.period,
                "grace": args.grace,
                "cap": args.cap,
            },
        )
        timestamps = late.read_timestamps_file(args.timestamps) if args.timestamps else None
    except (late.LatePolicyError, OSError) as exc:
        print(f"classgrader: late policy: {exc}", file=sys.stderr)
        return 2
    try:
        lms = lms_export.options_for(
            args.course, args.assignment, roster=args.lms_roster, missing_as_zero=args.missing_as_zero
        )
    except lms_export.MappingError as exc:
        print(f"classgrader: {exc}", file=sys.stderr)
        return 2

    try:
        made = secret.ensure_secret(args.course, course_id_of(args.course))
    except (OSError, seeds.SecretMissing) as exc:
        print(f"classgrader: the course secret: {exc}", file=sys.stderr)
        return 2
    if made:
        print(made, file=sys.stderr)

    settings = Settings(
        limits=sandbox.Limits(wall_seconds=args.timeout, memory_bytes=_size(args.memory)),
        sandboxed=not args.no_sandbox,
        sandbox_mode=args.sandbox_mode,
        kernel_record=not args.no_kernel_record,
    )
    if args.no_sandbox:
        print(
            "classgrader: WARNING: --no-sandbox runs learner code with your rights, next to your files", file=sys.stderr
        )
    try:
        summary = grade_class(
            args.course,
            args.assignment,
            args.submissions,
            out=args.out,
            db_url=args.db_url,
            workers=args.workers,
            settings=settings,
            roster=read_roster(args.roster) if args.roster else None,
            regrade=args.regrade,
            progress=False if args.quiet else None,
            log=lambda msg: print(msg, file=sys.stderr),
            late_policy=policy,
            timestamps=timestamps,
            cluster=args.cluster,
            lms=lms,
        )
    except KeyboardInterrupt:
        return 130
    except (SetupError, intake.IntakeError, sandbox.SandboxUnavailable) as exc:
        print(f"classgrader: {exc}", file=sys.stderr)
        return 2
    print(summary_text(summary.report))
    print(f"reports: {summary['reports']}")
    return 0


def _analyse_only(args: argparse.Namespace) -> int:
    from classgrader.after_deadline import item_analysis
    from classgrader.books import gradebook
    from classgrader.pipeline.class_run import course_id_of

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
            course_id_of(args.course.resolve()),
            args.assignment,
            reports_dir,
            order=item_analysis.release_order(args.course, args.assignment),
        )
    except item_analysis.AnalysisError as exc:
        print(f"classgrader: {exc}", file=sys.stderr)
        return 2
    print(item_analysis.table_text(analysis))
    print(f"reports: {reports_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
