"""The cluster mode of ``benchmarks/class_grading_speed.py``: ``./course grade --cluster`` against the local pool.

``class_grading_speed.py --cluster`` runs :func:`main` here:

1. ``-n`` submissions (default 200; 7 in 8 correct, the rest blank or partly
   right) made by the speed benchmark's :func:`make_submissions`;
2. the local pool (``grade_class`` with ``workers`` = cores), timed;
3. for N = 1, 2 and the number of cores: a Dask scheduler and N
   single-threaded workers as separate processes on 127.0.0.1
   (:class:`devtools.process_cluster.ProcessCluster`, start-up not timed),
   then ``grade_class(..., cluster=ADDRESS)``, timed; every run's gradebook must
   hold the local run's scores;
4. from the scheduler's task stream: each task's compute time on its worker
   (grading one submission, as a local run does) and, between the first
   task's start and the last one's end, the share of the workers' time that
   was *not* computing a task: what Dask adds (scheduling, transfers, the
   client's turn-around); the rest of the wall time is a fixed cost per run;
5. the client's own cost per submission (result files and one gradebook
   transaction), measured by writing the local run's results again;
6. a paper estimate for 10,000 submissions on 10 machines of 16 cores.

It prints a table and writes ``benchmarks/results/class_grading_cluster.json``.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _scores(out: Path, assignment: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id="sdpa-course") as gb:
        return {s.student_id: round(float(s.score), 6) for s in gb.assignment_submissions(assignment)}


def _grade(
    assignment: str, submitted: Path, out: Path, workers: int, cluster: str | None, kernel_record: bool
) -> float:
    from classgrader.pipeline.class_run import grade_class
    from classgrader.stages.grade import Settings

    start = time.perf_counter()
    grade_class(
        REPO,
        assignment,
        submitted,
        out=out,
        workers=workers,
        settings=Settings(kernel_record=kernel_record),
        progress=False,
        log=lambda m: None,
        cluster=cluster,
        analyse=False,
    )
    return time.perf_counter() - start


def _task_stream(records: list[dict], wall: float, threads: int) -> dict[str, float]:
    """Compute time per grading task, and the share of the workers' time not spent computing one.

    Between the first task's start and the last one's end (the *span*), each
    worker thread is either computing a task (grading a submission, as a local
    run does) or waiting on Dask (scheduling, transfers, the client's
    turn-around): that waiting, per task, is Dask's overhead. What lies outside
    the span (connecting, the fingerprint check, finding the submissions, the
    reports at the end) is a fixed cost per run, reported apart.
    """
    spans = []
    for rec in records:
        if not str(rec.get("key", "")).startswith("classgrader-"):
            continue
        spans += [(s["start"], s["stop"]) for s in rec.get("startstops", []) if s.get("action") == "compute"]
    if not spans:
        return {"tasks": 0}
    busy = sum(b - a for a, b in spans)
    span = max(b for _, b in spans) - min(a for a, _ in spans)
    capacity = span * threads
    return {
        "tasks": len(spans),
        "mean_task_seconds": round(busy / len(spans), 4),
        "idle_share": round(1 - busy / capacity, 4),
        "overhead_per_task_seconds": round((capacity - busy) / len(spans), 4),
        "fixed_seconds_per_run": round(wall - span, 2),
    }


def _client_cost(assignment: str, out: Path, scratch: Path) -> float:
    """Seconds per submission that the client spends saving one result: files, then one gradebook transaction."""
    from classgrader.books import gradebook, nbgrader_record
    from classgrader.records import read_result, write_json_atomic, write_text_atomic

    results = [r for p in sorted((out / "reports" / assignment / "results").glob("*.json")) if (r := read_result(p))]
    feedback = {p.parent.parent.name: p.read_text() for p in (out / "feedback").glob(f"*/{assignment}/*.html")}
    scratch.mkdir(parents=True, exist_ok=True)
    url = gradebook.sqlite_url(scratch / "gradebook.db")
    from classgrader import settings
    from classgrader.assignments.course import load_assignment

    course_settings = settings.read(REPO)
    cid = course_settings.course_id
    info = load_assignment(REPO, assignment, course_settings)
    nbgrader_record.ensure(REPO, assignment, [info.notebook], url, cid, course_settings.nbgrader, refresh=False)
    with gradebook.Writer(url, cid) as writer:
        start = time.perf_counter()
        for r in results:
            write_text_atomic(scratch / "feedback" / f"{r['student']}.html", feedback.get(r["student"], ""))
            write_json_atomic(scratch / "results" / f"{r['student']}.json", r)
            writer.write(r)
        return (time.perf_counter() - start) / max(len(results), 1)


def estimate(n: int, machines: int, cores: int, task_seconds: float, overhead: float, client: float) -> dict:
    """Wall time for ``n`` submissions on ``machines`` x ``cores`` single-threaded workers (paper estimate).

    The workers need ``ceil(n / slots)`` rounds of (task + overhead); the one
    client must save every result one after another: the run takes the longer
    of the two.
    """
    slots = machines * cores
    workers = math.ceil(n / slots) * (task_seconds + overhead)
    return {
        "submissions": n,
        "machines": machines,
        "cores_each": cores,
        "workers_seconds": round(workers, 1),
        "client_seconds": round(n * client, 1),
        "estimate_seconds": round(max(workers, n * client), 1),
    }


def main(args: Any, make_submissions) -> None:
    from distributed import Client

    from devtools.process_cluster import ProcessCluster

    cores = os.cpu_count() or 1
    sizes = sorted({1, 2, cores})
    kernel_record = not args.no_kernel_record
    with tempfile.TemporaryDirectory(prefix="class-grading-cluster-bench-") as tmp_name:
        tmp = Path(tmp_name)
        make_submissions(tmp, args.assignment, args.n)
        submitted = tmp / "submitted"
        local_out = tmp / "local"
        print(
            f"{args.n} submissions of {args.assignment} on {platform.machine()}, {cores} cores"
            f"{'' if kernel_record else ' (--no-kernel-record)'}",
            flush=True,
        )
        t_local = _grade(args.assignment, submitted, local_out, cores, None, kernel_record)
        expected = _scores(local_out, args.assignment)
        print(f"  local pool, {cores} workers            {t_local:7.1f} s  {args.n / t_local:6.2f} per s", flush=True)
        client = _client_cost(args.assignment, local_out, tmp / "client")
        print(f"  client: {client * 1000:.1f} ms per submission (result files + one gradebook transaction)", flush=True)
        runs = {}
        for n_workers in sizes:
            started = time.perf_counter()
            with ProcessCluster(workers=n_workers) as cluster:
                startup = time.perf_counter() - started
                with Client(cluster.address, set_as_default=False) as watcher:
                    watcher.get_task_stream(count=1)  # start recording
                    t0 = time.time()
                    out = tmp / f"cluster{n_workers}"
                    wall = _grade(args.assignment, submitted, out, n_workers, cluster.address, kernel_record)
                    stream = _task_stream(watcher.get_task_stream(start=t0), wall, n_workers)
            runs[n_workers] = r = {
                "seconds": round(wall, 2),
                "per_second": round(args.n / wall, 2),
                "startup_seconds": round(startup, 1),
                **stream,
                "same_scores_as_local": _scores(out, args.assignment) == expected,
            }
            print(
                f"  cluster, {n_workers} single-threaded workers  {r['seconds']:7.1f} s  {r['per_second']:6.2f} per s"
                f"  task {r['mean_task_seconds']:.3f} s, Dask overhead {r['overhead_per_task_seconds']:.3f} s "
                f"per task ({100 * r['idle_share']:.1f}% of worker time)  same scores: {r['same_scores_as_local']}"
                f"  (per run: {r['fixed_seconds_per_run']:.1f} s before the first and after the last task; "
                f"cluster start-up {r['startup_seconds']:.1f} s, not timed)",
                flush=True,
            )

    one = runs[1]
    paper = estimate(10_000, 10, 16, one["mean_task_seconds"], one["overhead_per_task_seconds"], client)
    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {cores} cores, Python {platform.python_version()}",
        "assignment": args.assignment,
        "submissions": args.n,
        "kernel_record": kernel_record,
        "local_pool": {"workers": cores, "seconds": round(t_local, 2), "per_second": round(args.n / t_local, 2)},
        "cluster": runs,
        "client_seconds_per_submission": round(client, 4),
        "paper_10000_on_10x16": paper,
    }
    print(
        f"  paper estimate, 10,000 submissions on 10 machines x 16 cores: {paper['estimate_seconds']:.0f} s "
        f"(workers {paper['workers_seconds']:.0f} s, client {paper['client_seconds']:.0f} s)"
    )
    out = args.out.with_name("class_grading_cluster.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
