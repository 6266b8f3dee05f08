"""Grade a whole class: a bounded pool of sandboxed workers, one gradebook writer.

Order of writes for each submission, so that an interruption at any moment
loses nothing and counts nothing twice:

1. the autograded notebook and the feedback page (each via a temporary file
   and an atomic rename);
2. the result JSON, ``reports/<assignment>/results/<student>.json`` (also
   atomic): from now on the submission counts as graded;
3. the gradebook, one transaction per submission, by the main thread only.

A second run skips every submission whose result JSON carries the same key
(the hash of the submitted file, the release, ``grading``, ``lib`` and this
grader) and re-applies its scores to the gradebook only if they differ; a
submission interrupted before step 2 is simply graded again.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import os
import queue
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat

from classgrader import sandbox
from classgrader.after_deadline import late
from classgrader.assignments import plain
from classgrader.assignments.course import AssignmentInfo, SetupError, load_assignment, submission_key, submitted_bytes
from classgrader.books import class_reports, gradebook, lms_export
from classgrader.pipeline import intake
from classgrader.records import Result, read_result, write_json_atomic, write_text_atomic
from classgrader.stages import report
from classgrader.stages.grade import Graded, Settings, grade


def course_id_of(course: Path) -> str:
    """nbgrader's ``CourseDirectory.course_id`` from the course's ``nbgrader_config.py``."""
    from grading.course_config import course_id

    return course_id(course)


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


#: The files of an nbgrader submission that its feedback needs: ``nbgrader release_feedback`` reads both
#: beside each feedback page (the secret makes the name under which ``fetch_feedback`` finds the page).
HANDOVER = ("timestamp.txt", "submission_secret.txt")


def _save(paths: Paths, graded: Graded, sub: intake.Submission) -> None:
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


def _put_back_feedback(paths: Paths, info: AssignmentInfo, sub: intake.Submission, result: Result) -> None:
    """The course's feedback page for an already graded submission, written again if it is missing or if
    another tool (``nbgrader generate_feedback``) has replaced it; and the files the exchange needs."""
    if result["status"] == "missing":
        return
    for stem in result.get("notebooks") or [paths.stem]:  # a plain assignment's notebooks, each with its page
        autograded = paths.autograded(sub.student, stem)
        nb = nbformat.read(autograded, as_version=4) if autograded.exists() else None
        page = report.render(result, nb, base_url=info.book_url)
        target = paths.feedback(sub.student, stem)
        if not target.is_file() or target.read_text(errors="replace") != page:
            write_text_atomic(target, page)
    hand_over(paths, sub)


def _same_scores(current: dict[str, float | None] | None, result: Result) -> bool:
    if current is None:
        return False
    want = {gid: c.get("score") for gid, c in result["cells"].items()}
    return all(current.get(gid) == score for gid, score in want.items())


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
    log: Callable[[str], Any] = print,
    late_policy: late.Policy | None = None,
    timestamps: dict[str, str] | None = None,
    analyse: bool = True,
    cluster: Any = None,
    lms: lms_export.LmsOptions | None = None,
) -> dict:
    """Grade every submission of ``assignment`` found at ``submissions``; return the summary.

    ``late_policy`` defaults to the course's (``c.LatePolicy`` in its
    ``nbgrader_config.py``); ``timestamps`` (``{student: time}``) wins over the
    times the submissions record. ``analyse`` also writes the item analysis.
    ``cluster`` (a Dask scheduler's address, or a connected
    ``distributed.Client``) grades on that cluster's workers
    instead of a local pool (:mod:`classgrader.pipeline.dask_cluster`); this process still
    writes every output.
    """
    started = time.monotonic()
    course = course.resolve()
    out = (out or course).resolve()
    settings = settings or Settings()
    workers = max(1, workers or os.cpu_count() or 1)
    info: AssignmentInfo = load_assignment(course, assignment)
    if info.plain and cluster is not None:
        raise SetupError(
            f"{assignment} is a plain nbgrader assignment: it is graded on this machine only (no --cluster)"
        )
    policy = late_policy if late_policy is not None else late.policy_for(course, assignment)
    paths = Paths(out, assignment, Path(info.notebook).stem)
    out.mkdir(parents=True, exist_ok=True)
    db_url = gradebook.normalise_url(db_url or gradebook.sqlite_url(out / "gradebook.db"))
    cid = course_id_of(course)
    if settings.sandboxed and cluster is None:  # on a cluster, each worker checks its own
        settings = dataclasses.replace(settings, sandbox_mode=sandbox.check_available(settings.sandbox_mode))
        if settings.sandbox_mode == "userns" and os.geteuid() == 0:
            log(
                "classgrader: the userns sandbox runs as root here, where the kernel does not hold uid 0 to the "
                "process-count limit; the root mode (the default as root) does"
            )
    for notebook in [nb.name for nb in info.plain] or [info.notebook]:
        gradebook.ensure_assignment(db_url, cid, assignment, info.source_dir, notebook)

    with (
        tempfile.TemporaryDirectory(prefix="classgrader-intake-") as tmp,
        gradebook.Writer(db_url, cid) as writer,
        _session(cluster, settings, log) as session,
    ):
        root = submissions
        if submissions.is_file():
            root = intake.extract_zip(submissions, Path(tmp) / "unzipped")
        known = [s.id for s in writer.gb.students]
        policy = late.with_gradebook_duedate(policy, writer.gb.find_assignment(assignment).duedate)
        subs = intake.discover(root, assignment, info.notebook, roster=list(roster or []) + known)
        if not subs:
            raise intake.IntakeError(f"no submissions of {assignment} found in {submissions}")
        for sub in subs:
            if timestamps and sub.student in timestamps:
                sub.timestamp, sub.timestamp_source, sub.lms_late = timestamps[sub.student], "--timestamps", None

        todo: list[intake.Submission] = []
        results: dict[str, Result] = {}
        for sub in subs:
            prev = None if regrade else read_result(paths.result(sub.student))
            if (
                prev is not None
                and "status" in prev
                and sub.path is not None
                and prev.get("key") == submission_key(info, submitted_bytes(info, sub.path))
                and prev.get("assignment") == assignment
            ):
                results[sub.student] = prev
                late_changed = late.annotate(prev, sub, policy)
                if late_changed:
                    write_json_atomic(paths.result(sub.student), prev)
                if prev["status"] != "missing" and (
                    late_changed or not _same_scores(writer.current(assignment, sub.student), prev)
                ):
                    writer.write(prev)
                _put_back_feedback(paths, info, sub, prev)
            else:
                todo.append(sub)
        if len(results):
            log(
                f"classgrader: {len(results)} of {len(subs)} submissions already graded and unchanged; "
                f"grading the other {len(todo)}"
            )

        stop = threading.Event()
        registry = sandbox.Registry()
        slots: queue.Queue[int] = queue.Queue()
        for i in range(workers):
            slots.put(i)

        def work(sub: intake.Submission) -> Result | None:
            if stop.is_set():
                return None
            slot = slots.get()
            try:
                graded = grade(info, sub, settings, policy, slot=slot, registry=registry)
            finally:
                slots.put(slot)
            if stop.is_set():
                return None  # killed by the interrupt: not a real outcome, grade it next time
            _save(paths, graded, sub)
            return graded.result

        from tqdm import tqdm

        bar = tqdm(
            total=len(todo),
            desc=f"grading {assignment}",
            unit="nb",
            disable=(not progress) if progress is not None else None,
        )
        pool = cf.ThreadPoolExecutor(max_workers=workers if session is None else 1, thread_name_prefix="classgrader")
        old_term = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
        if old_term is not None:
            signal.signal(signal.SIGTERM, _raise_interrupt)
        interrupted = False
        counts: dict[str, int] = {}

        def finish(result: Result) -> None:
            if result["status"] != "missing":
                writer.write(result)
            results[result["student"]] = result
            counts[result["status"]] = counts.get(result["status"], 0) + 1
            bar.set_postfix(counts, refresh=False)
            bar.update(1)

        def saved(sub: intake.Submission, graded: Graded) -> None:
            _save(paths, graded, sub)
            finish(graded.result)

        def failed(sub: intake.Submission, why: str) -> None:
            log(f"classgrader: {sub.student} not graded: {why}")
            bar.update(1)

        try:
            if session is not None:
                workers = session.threads
                session.grade(info, todo, policy, on_result=saved, on_failure=failed)
            futures = {pool.submit(work, sub): sub for sub in todo} if session is None else {}
            for fut in cf.as_completed(futures):
                sub = futures[fut]
                try:
                    result = fut.result()
                except Exception as exc:  # a bug in grading one notebook must not stop the class
                    failed(sub, f"internal error: {type(exc).__name__}: {exc}")
                    continue
                if result is not None:
                    finish(result)
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
            registry.kill_all()
            pool.shutdown(wait=True, cancel_futures=True)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            bar.close()
            if old_term is not None:
                signal.signal(signal.SIGTERM, old_term)
        if interrupted:
            log(
                f"classgrader: interrupted; {len(results)} of {len(subs)} submissions are graded and saved. "
                "Run the same command again to grade the rest."
            )
            raise KeyboardInterrupt

    ordered = [results[s.student] for s in subs if s.student in results]
    summary = class_reports.write_all(
        ordered,
        paths.reports,
        assignment=assignment,
        seconds=time.monotonic() - started,
        workers=workers,
        policy=policy,
        sandbox=_sandbox_mode(settings, cluster, ordered),
        lms=lms if lms is not None else lms_export.options_for(course, assignment),
        threat_model=plain.THREAT_MODEL if info.plain else None,
    )
    if analyse:
        from classgrader.after_deadline import item_analysis

        try:
            item_analysis.write(
                db_url, cid, assignment, paths.reports, notebook=paths.stem, order=list(info.grade_cells)
            )
        except item_analysis.AnalysisError as exc:
            log(f"classgrader: no item analysis: {exc}")
    summary["reports"] = str(paths.reports)
    return summary


def _session(cluster: Any, settings: Settings, log):
    """A checked connection to the Dask scheduler at ``cluster``, or nothing for a local run."""
    if cluster is None:
        return contextlib.nullcontext()
    from classgrader.pipeline.dask_cluster import Session

    return Session(cluster, settings, log=log)


def _sandbox_mode(settings: Settings, cluster: Any, results: list[Result]) -> str:
    """The sandbox mode the summary names: this machine's, or on a cluster the modes its workers used."""
    if not settings.sandboxed:
        return "none"
    if cluster is None:
        return settings.sandbox_mode
    used = {str(r["sandbox"].get("mode")) for r in results if r.get("sandbox")}
    return ", ".join(sorted(used)) or settings.sandbox_mode


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt
