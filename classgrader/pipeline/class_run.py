"""Grade a whole class, in named steps: prepare -> intake -> sort out -> reuse -> grade the rest -> hand grades
-> books.

1. :func:`prepare`: the assignment, its outputs' places, the gradebook's
   assignment, and the :mod:`~classgrader.pipeline.fingerprint` of what
   decides a raw score;
2. :func:`take_in`: the submissions (:mod:`classgrader.pipeline.intake`);
3. :func:`sort_out`: which saved results still hold; if some were graded
   under other inputs, stop and name them unless asked to regrade
   (:class:`~classgrader.pipeline.fingerprint.FingerprintChanged`);
4. :func:`reuse`: the results that hold, re-priced under the current late
   policy and put back in the gradebook if they differ there;
5. :func:`grade_rest`: every other submission, on an
   :class:`~classgrader.pipeline.executors.Executor` (a local pool or a Dask
   cluster), each outcome saved here, in this thread;
6. :func:`count_hand_grades`: the scores and comments given by hand in
   nbgrader's formgrader, counted as nbgrader counts them;
7. :func:`write_books`: the class reports and the item analysis.

Order of writes for each submission, so that an interruption at any moment
loses nothing and counts nothing twice:

1. the autograded notebook and the feedback page (each via a temporary file
   and an atomic rename);
2. the result JSON, ``reports/<assignment>/results/<student>.json`` (also
   atomic): from now on the submission counts as graded;
3. the gradebook, one transaction per submission, by the main thread only.

A second run skips every submission whose result JSON carries the same key
(the hash of the submitted file and the fingerprint) and re-applies its
scores to the gradebook only if they differ; a submission interrupted before
step 2 is simply graded again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from classgrader import privacy, sandbox
from classgrader.after_deadline import late
from classgrader.assignments.course import (
    AssignmentInfo,
    SetupError,
    key_parts,
    load_assignment,
    submission_key,
)
from classgrader.books import class_reports, gradebook, hand_grades, lms_export, nbgrader_record
from classgrader.pipeline import fingerprint, intake
from classgrader.pipeline.dask_cluster import Session
from classgrader.pipeline.executors import Executor, LocalPool
from classgrader.pipeline.outputs import Paths, put_back_feedback, save
from classgrader.records import Result, read_result, write_json_atomic
from classgrader.settings import CourseSettings
from classgrader.settings import read as read_course_settings
from classgrader.stages.grade import Settings

__all__ = ["ClassSummary", "grade_class"]

Log = Callable[[str], Any]


@dataclasses.dataclass
class ClassRun:
    """What every step of one class run shares."""

    course: Path
    course_settings: CourseSettings  # nbgrader_config.py, read once for the whole run
    info: AssignmentInfo  # its key is the fingerprint's
    paths: Paths
    settings: Settings
    policy: late.Policy
    db_url: str
    course_id: str
    fingerprint: fingerprint.Fingerprint
    log: Log


@dataclasses.dataclass
class Sorted:
    """The submissions of a run, each with what to do with it."""

    subs: list[intake.Submission]
    reusable: list[tuple[intake.Submission, Result]]  # saved results that still hold
    todo: list[intake.Submission]  # to grade
    stale: list[str]  # fingerprint keys of saved results graded under other inputs (their files unchanged)
    # graded earlier from a folder that held them, not in this one (e.g. one learner graded alone): kept,
    # re-priced only
    kept: list[tuple[intake.Submission, Result]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class NewlyGraded:
    """What :func:`grade_rest` did: the results it saved, and who was not graded (graded by the next run)."""

    results: list[Result]
    not_graded: list[str]
    workers: int


@dataclasses.dataclass(frozen=True)
class ClassSummary(Mapping[str, Any]):
    """What a class run did; read as a mapping, it is ``summary.json`` plus ``reports`` (the folder)."""

    reports: Path
    reused: int
    graded: int
    not_graded: tuple[str, ...]
    report: dict[str, Any]  # summary.json

    def __getitem__(self, name: str) -> Any:
        return str(self.reports) if name == "reports" else self.report[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*self.report, "reports"])

    def __len__(self) -> int:
        return len(self.report) + 1


def open_executor(cluster: Any, settings: Settings, workers: int, log: Callable[[str], Any]) -> Executor:
    """A checked connection to the Dask scheduler at ``cluster`` (an address or a ``distributed.Client``),
    or, without one, a pool of ``workers`` threads here."""
    if cluster is None:
        return LocalPool(settings, workers)
    return Session(cluster, settings, log=log)


def grade_class(
    course: Path,
    assignment: str,
    submissions: Path,
    *,
    out: Path | None = None,
    db_url: str | None = None,
    workers: int | None = None,
    settings: Settings | None = None,
    roster: list[str] | None = None,
    regrade: bool = False,
    progress: bool | None = None,
    log: Log = print,
    late_policy: late.Policy | None = None,
    timestamps: dict[str, str] | None = None,
    analyse: bool = True,
    cluster: Any = None,
    lms: lms_export.LmsOptions | None = None,
    course_settings: CourseSettings | None = None,
) -> ClassSummary:
    """Grade every submission of ``assignment`` found at ``submissions``; return the summary.

    ``late_policy`` defaults to the course's (``c.LatePolicy`` in its
    ``nbgrader_config.py``); ``timestamps`` (``{student: time}``) wins over the
    times the submissions record. ``regrade`` grades every submission again,
    also those whose saved results still hold; without it, a run stops before
    grading anything if saved results were graded under other inputs
    (:class:`~classgrader.pipeline.fingerprint.FingerprintChanged`).
    ``analyse`` also writes the item analysis. ``cluster`` (a Dask
    scheduler's address, or a connected ``distributed.Client``) grades on
    that cluster's workers instead of a local pool
    (:mod:`classgrader.pipeline.dask_cluster`); this process still writes
    every output. ``course_settings`` are the course's ``nbgrader_config.py``
    as read once for this run (:func:`classgrader.settings.read`; read here
    when not given); every step takes what it needs from them.
    """
    started = time.monotonic()
    if course_settings is None:
        course_settings = read_course_settings(course)
    run = prepare(course, assignment, out, db_url, settings or Settings(), late_policy, cluster, log, course_settings)
    workers = max(1, workers or os.cpu_count() or 1)
    with (
        tempfile.TemporaryDirectory(prefix="classgrader-intake-") as tmp,
        gradebook.Writer(run.db_url, run.course_id) as writer,
        open_executor(cluster, run.settings, workers, log) as executor,
    ):
        subs = take_in(run, submissions, Path(tmp), writer, list(roster or []), timestamps or {})
        plan = sort_out(run, subs, regrade)
        reused = reuse(run, plan.reusable, writer) + keep(run, plan.kept, writer)
        done = NewlyGraded([], [], workers)
        try:
            grade_rest(run, plan.todo, executor, writer, progress, done)
        except KeyboardInterrupt:
            log(
                f"classgrader: interrupted; {len(reused) + len(done.results)} of {len(subs)} submissions are "
                "graded and saved. Run the same command again to grade the rest."
            )
            raise
        names = gradebook.names(writer.gb)
        by_hand = hand_grades.read(writer.gb, run.info.name)
    by_student = {r["student"]: r for r in [*reused, *done.results]}
    ordered = [by_student[s.student] for s in subs if s.student in by_student]
    for r in ordered:  # the reports name each learner as the gradebook does (nbgrader db student add --first-name)
        r["display_name"] = names.get(r["student"]) or r.get("display_name") or ""
    counted = count_hand_grades(run, subs, ordered, by_hand, fresh={id(r) for r in done.results})
    report = write_books(run, counted, time.monotonic() - started, done.workers, cluster is not None, lms, analyse)
    return ClassSummary(run.paths.reports, len(reused), len(done.results), tuple(done.not_graded), report)


def prepare(
    course: Path,
    assignment: str,
    out: Path | None,
    db_url: str | None,
    settings: Settings,
    late_policy: late.Policy | None,
    cluster: Any,
    log: Log,
    course_settings: CourseSettings,
) -> ClassRun:
    """Step 1: the assignment, where its outputs go, its gradebook entry and its fingerprint."""
    course = course.resolve()
    out = (out or course).resolve()
    info = load_assignment(course, assignment, course_settings)
    refusal = info.kind.cluster_refusal(assignment)
    if refusal is not None and cluster is not None:
        raise SetupError(refusal)
    asked = settings
    if settings.sandboxed and cluster is None:  # on a cluster, each worker checks its own
        settings = dataclasses.replace(settings, sandbox_mode=sandbox.check_available(settings.sandbox_mode))
        if settings.sandbox_mode == "userns" and os.geteuid() == 0:
            log(
                "classgrader: the userns sandbox runs as root here, where the kernel does not hold uid 0 to the "
                "process-count limit; the root mode (the default as root) does"
            )
    out.mkdir(parents=True, exist_ok=True)
    db_url = gradebook.normalise_url(db_url or gradebook.sqlite_url(out / "gradebook.db"))
    cid = course_settings.course_id
    nbgrader_record.ensure(
        course,
        assignment,
        info.kind.notebook_names(),
        db_url,
        cid,
        course_settings.nbgrader,
        refresh=info.kind.refresh_record,
    )
    # What the kind takes from nbgrader's record (a plain assignment's test cells), which the fingerprint covers.
    info = dataclasses.replace(info, kind=info.kind.recorded(assignment, db_url, cid))
    # The key follows the sandbox mode as asked for, so a local and a cluster run share it.
    inputs = fingerprint.of(course, info, asked)
    info = dataclasses.replace(info, key=inputs.key)
    if db_url.startswith("sqlite:///"):  # learners' grades: the instructor's alone (classgrader.privacy)
        privacy.owner_only(Path(db_url[len("sqlite:///") :]))
    policy = late_policy if late_policy is not None else late.policy_of(course_settings.late, assignment)
    paths = Paths(out, assignment, Path(info.notebook).stem)
    return ClassRun(course, course_settings, info, paths, settings, policy, db_url, cid, inputs, log)


def take_in(
    run: ClassRun,
    submissions: Path,
    tmp: Path,
    writer: gradebook.Writer,
    roster: list[str],
    timestamps: dict[str, str],
) -> list[intake.Submission]:
    """Step 2: the submissions at ``submissions`` (a folder or a zip), one per student of the roster and
    the gradebook; the late policy takes the gradebook's due date."""
    name = run.info.name
    root = intake.extract_zip(submissions, tmp / "unzipped") if submissions.is_file() else submissions
    known = [s.id for s in writer.gb.students]
    run.policy = late.with_gradebook_duedate(run.policy, writer.gb.find_assignment(name).duedate)
    subs = intake.discover(root, name, run.info.notebook, roster=roster + known)
    if not subs:
        raise intake.IntakeError(f"no submissions of {name} found in {submissions}")
    extensions = gradebook.extensions(writer.gb, name)
    for sub in subs:
        if sub.student in timestamps:
            sub.timestamp, sub.timestamp_source, sub.lms_late = timestamps[sub.student], "--timestamps", None
        sub.extension = extensions.get(sub.student, 0.0)
    return subs


def sort_out(run: ClassRun, subs: list[intake.Submission], regrade: bool) -> Sorted:
    """Step 3: which saved results hold; stop (before any write) if some were graded under other inputs.

    With ``regrade``, every submission is graded again. Then the fingerprint is recorded beside the
    results, keeping the earlier ones that saved results still carry.
    """
    plan = Sorted(subs, [], [], [])
    used: set[str] = set()
    for sub in subs:
        prev = read_result(run.paths.result(sub.student))
        if sub.path is None and prev is not None and _handed_in(prev, run.info.name):
            plan.kept.append((sub, prev))  # graded by an earlier run from another folder: its row stays
            continue
        if (
            regrade
            or prev is None
            or "status" not in prev
            or sub.path is None
            or prev.get("assignment") != run.info.name
        ):
            plan.todo.append(sub)
            continue
        saved_file, saved_print = key_parts(str(prev.get("key", "")))
        used.add(saved_print)
        now = submission_key(run.info, run.info.kind.submitted_bytes(sub.path))
        if prev.get("key") == now:
            plan.reusable.append((sub, prev))
            continue
        if saved_file == key_parts(now)[0]:
            plan.stale.append(saved_print)
        plan.todo.append(sub)
    if plan.stale:
        message = fingerprint.stale_message(run.fingerprint, plan.stale, run.paths.reports, run.info.name)
        raise fingerprint.FingerprintChanged(message)
    fingerprint.write_record(run.paths.reports, run.fingerprint, used)
    handed_in = [sub for sub in plan.todo if sub.path is not None]
    absent = len(plan.todo) - len(handed_in)
    if plan.reusable:
        run.log(
            f"classgrader: {len(plan.reusable)} of {len(plan.reusable) + len(handed_in)} submissions already "
            f"graded and unchanged; grading the other {len(handed_in)}"
            + (f" ({absent} student{'s' * (absent != 1)} with no submission recorded as missing)" if absent else "")
        )
    if plan.kept:
        run.log(
            f"classgrader: {len(plan.kept)} student(s) graded by an earlier run are not in {run.info.name}'s "
            "folder this time: their saved results are kept (re-priced only)"
        )
    return plan


def reuse(run: ClassRun, reusable: list[tuple[intake.Submission, Result]], writer: gradebook.Writer) -> list[Result]:
    """Step 4: each result that holds, re-priced under the current late policy (its raw score kept), and in
    the gradebook if it differs there (its feedback page is put back by :func:`count_hand_grades`)."""
    dropped = []
    for sub, prev in reusable:
        had = late.late_of(prev).get("penalty") or 0
        late_changed = late.annotate(prev, sub, run.policy)
        if had and not run.policy.penalty.value:
            dropped.append(sub.student)
        if late_changed:
            write_json_atomic(run.paths.result(sub.student), prev)
        if prev["status"] != "missing" and (
            late_changed or not _same_scores(writer.current(run.info.name, sub.student), prev)
        ):
            writer.write(prev)
    _warn_dropped_penalties(run, dropped)
    return [prev for _, prev in reusable]


def _warn_dropped_penalties(run: ClassRun, students: list[str]) -> None:
    """Late options are given per run: say so when this run's policy has no penalty and cleared earlier ones."""
    if students:
        run.log(
            f"classgrader: WARNING: an earlier run charged {len(students)} submission(s) a late penalty "
            f"({', '.join(sorted(students)[:5])}{', ...' if len(students) > 5 else ''}); this run's late policy "
            "has no penalty, so they are no longer charged. To keep the penalties, give this run the same late "
            "options (--deadline, --penalty and the rest), or set them once in nbgrader_config.py (c.LatePolicy)."
        )


def keep(run: ClassRun, kept: list[tuple[intake.Submission, Result]], writer: gradebook.Writer) -> list[Result]:
    """Step 4, for students graded earlier whose submission is not in this run's folder: each saved result as it
    is, re-priced under the current late policy and extension from the time it recorded."""
    dropped = []
    for sub, prev in kept:
        had = late.late_of(prev).get("penalty") or 0
        if late.reprice_saved(prev, run.policy, sub.extension):
            write_json_atomic(run.paths.result(sub.student), prev)
            writer.write(prev)
        if had and not run.policy.penalty.value:
            dropped.append(sub.student)
    _warn_dropped_penalties(run, dropped)
    return [prev for _, prev in kept]


def grade_rest(
    run: ClassRun,
    todo: list[intake.Submission],
    executor: Executor,
    writer: gradebook.Writer,
    progress: bool | None,
    done: NewlyGraded,
) -> None:
    """Step 5: grade ``todo`` on ``executor``; save each outcome, then write it to the gradebook; add it to
    ``done`` (which keeps what was saved when an interrupt propagates).

    The one place where graded submissions are saved, for a local pool and a cluster alike. An interrupt
    (Ctrl+C, SIGTERM) stops the executor's sandboxes and propagates; what was saved stays saved.
    """
    from tqdm import tqdm

    done.workers = executor.threads
    counts: dict[str, int] = {}
    disable = (not progress) if progress is not None else None
    with (
        tqdm(total=len(todo), desc=f"grading {run.info.name}", unit="nb", disable=disable) as bar,
        _terminate_as_interrupt(),
    ):
        try:
            for outcome in executor.grade(run.info, todo, run.policy):
                bar.update(1)
                graded, why = outcome.graded, outcome.failure
                if graded is not None:
                    try:
                        save(run.paths, graded, outcome.sub)
                    except Exception as exc:  # one notebook that cannot be saved must not stop the class
                        graded, why = None, f"internal error: {type(exc).__name__}: {exc}"
                if graded is None:
                    run.log(f"classgrader: {outcome.sub.student} not graded: {why}")
                    done.not_graded.append(outcome.sub.student)
                    continue
                result = graded.result
                if result["status"] != "missing":
                    writer.write(result)
                done.results.append(result)
                counts[result["status"]] = counts.get(result["status"], 0) + 1
                bar.set_postfix(counts, refresh=False)
        except KeyboardInterrupt:
            executor.interrupt()
            raise


def count_hand_grades(
    run: ClassRun,
    subs: list[intake.Submission],
    results: list[Result],
    by_hand: Mapping[str, hand_grades.HandGrades],
    *,
    fresh: set[int],
) -> list[Result]:
    """Step 6: each result with the instructor's hand grades counted (:mod:`classgrader.books.hand_grades`),
    and each feedback page that should say otherwise written again: a result not graded in this run (its
    page may have been replaced by ``nbgrader generate_feedback``, or its price changed), or one with hand
    grades. The saved results keep the autograder's scores."""
    subs_of = {s.student: s for s in subs}
    counted = []
    for r in results:
        sub = subs_of[r["student"]]
        shown = hand_grades.apply(r, by_hand.get(r["student"]), run.policy, sub.extension)
        if id(r) not in fresh or shown is not r:
            put_back_feedback(run.paths, run.info, sub, shown)
        counted.append(shown)
    return counted


def write_books(
    run: ClassRun,
    results: list[Result],
    seconds: float,
    workers: int,
    on_cluster: bool,
    lms: lms_export.LmsOptions | None,
    analyse: bool,
) -> dict[str, Any]:
    """Step 7: the class reports (scores, LMS files, summary, histogram) and the item analysis."""
    info = run.info
    report = class_reports.write_all(
        results,
        run.paths.reports,
        assignment=info.name,
        seconds=seconds,
        workers=workers,
        policy=run.policy,
        sandbox=_sandbox_mode(run.settings, on_cluster, results),
        lms=lms if lms is not None else lms_export.options_of(run.course_settings.lms, run.course, info.name),
        threat_model=info.kind.threat_model,
    )
    if analyse:
        from classgrader.after_deadline import item_analysis

        try:
            item_analysis.write(
                run.db_url,
                run.course_id,
                info.name,
                run.paths.reports,
                order=list(info.grade_cells),
            )
        except item_analysis.AnalysisError as exc:
            run.log(f"classgrader: no item analysis: {exc}")
    return report


def _handed_in(prev: Result | None, assignment: str) -> bool:
    """A saved result of ``assignment`` for a submission that was graded (not recorded as missing)."""
    return prev is not None and prev.get("assignment") == assignment and prev.get("status", "missing") != "missing"


def _same_scores(current: dict[str, float | None] | None, result: Result) -> bool:
    if current is None:
        return False
    want = {gid: c.get("score") for gid, c in result["cells"].items()}
    return all(current.get(gid) == score for gid, score in want.items())


def _sandbox_mode(settings: Settings, on_cluster: bool, results: list[Result]) -> str:
    """The sandbox mode the summary names: this machine's, or on a cluster the modes its workers used."""
    if not settings.sandboxed:
        return "none"
    if not on_cluster:
        return settings.sandbox_mode
    used = {str(r["sandbox"].get("mode")) for r in results if r.get("sandbox")}
    return ", ".join(sorted(used)) or settings.sandbox_mode


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the main thread while grading, so it stops cleanly too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
