"""Grading on a Dask cluster (``./course grade --cluster``): the same grades as a local run, and its faults.

Each test starts a Dask scheduler and workers as separate processes on
127.0.0.1 (:class:`devtools.process_cluster.ProcessCluster`) and grades through
``--cluster``. The first grades the whole class of bad submissions
(``devtools/sample_submissions/builder.py``) and compares with one local run
of it: the same statuses, scores, notes, flags and gradebook rows. Then, each
on a small class compared with the same local run: a worker killed mid-task,
the scheduler killed mid-run (the next run resumes), and workers whose ``lib``
or checks differ from the client's (refused before anything is graded).

The runs here skip the item analysis (``analyse=False``): the client makes it
from the gradebook after grading, wherever the grading ran, and
``tests/test_item_analysis.py`` tests it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import threading
import time
import urllib.parse
from pathlib import Path

import pytest
from graded_class import Listener, graded_class, holding  # noqa: F401 (graded_class: a fixture)
from test_class_grading import (
    ASSIGNMENT,
    LIMITS,
    REPO,
    gradebook_scores,
    needs_sandbox,
    postgres,  # noqa: F401 (a fixture)
    quiet,
)

from classgrader.pipeline.class_run import grade_class
from classgrader.pipeline.dask_cluster import ClusterError
from classgrader.stages.grade import Settings
from devtools.process_cluster import ProcessCluster
from devtools.sample_submissions import EXPECTED, Builder

pytestmark = needs_sandbox

# How long a wait for a worker or a result may last: it ends on its condition, so only a stuck run waits it out.
WAIT_SECONDS = 600

#: What a cluster run must reproduce of each local result (times and the sandbox's own log may differ).
#: (The file hash in ``key`` differs: some fixtures hold the paths of their own run.)
SAME = (
    "status",
    "score",
    "max_score",
    "cells",
    "comments",
    "notes",
    "repairs",
    "flagged",
    "in_kernel",
    "seed",
    "late",
    "display_name",
    "submitted_file",
    "layout",
)


def results_of(out: Path) -> dict[str, dict]:
    folder = out / "reports" / ASSIGNMENT / "results"
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


#: A note on a cell stopped at its time budget: which cells an endless loop leaves time for depends on the
#: machine's load at that moment, so these notes are compared by whether there is one, not one by one.
BUDGET_NOTE = "was stopped at its time budget"


def comparable(result: dict) -> dict:
    same = {k: result.get(k) for k in SAME}
    notes = same.pop("notes") or []
    return {
        **same,
        "notes": [n for n in notes if BUDGET_NOTE not in n],
        "stopped_at_a_budget": any(BUDGET_NOTE in n for n in notes),
        "assignment_key": result["key"].split("-")[-1],
    }


def csv_rows(text: str) -> list[list[str]]:
    """student_scores.csv's rows, each with its notes column compared as :func:`comparable` compares notes."""
    rows = list(csv.reader(io.StringIO(text)))
    column = rows[0].index("notes")
    for row in rows[1:]:
        notes = [n for n in row[column].split(" | ") if n]
        kept = [n for n in notes if BUDGET_NOTE not in n]
        row[column] = " | ".join(kept) + (" | (stopped at a budget)" if len(kept) < len(notes) else "")
    return rows


@pytest.fixture(scope="module")
def builder() -> Builder:
    return Builder(REPO, ASSIGNMENT)


@pytest.fixture(scope="module")
def local(graded_class) -> dict[str, dict]:  # noqa: F811
    """The whole class of bad submissions (and a roster student who sent nothing), graded locally
    (once for the whole run: tests/graded_class.py)."""
    root = graded_class["root"]
    with holding(root):
        return {
            "results": results_of(root),
            "gradebook": gradebook_scores(f"sqlite:///{root / 'gradebook.db'}"),
            "csv": (root / "reports" / ASSIGNMENT / "student_scores.csv").read_text(),
        }


def test_a_cluster_run_gives_the_local_grades_into_postgresql(tmp_path, builder, local, postgres):  # noqa: F811
    listener = Listener()
    messages: list[str] = []
    try:
        submitted = builder.write_submitted(
            tmp_path, EXPECTED, solutions=REPO / "solutions", gradebook=tmp_path / "gradebook.db", port=listener.port
        )
        # Three workers: a count no local default on a two-core machine gives.
        with ProcessCluster(workers=3) as cluster:
            summary = grade_class(
                REPO,
                ASSIGNMENT,
                submitted,
                out=tmp_path,
                db_url=postgres,
                settings=Settings(limits=LIMITS),
                roster=["absent_student"],
                progress=False,
                log=messages.append,
                analyse=False,
                cluster=cluster.address,
            )
    finally:
        listener.close()
    assert listener.accepted == 0  # the sandboxes on the workers reach no network either
    got = results_of(tmp_path)
    assert set(got) == set(local["results"]) == set(EXPECTED) | {"absent_student"}
    for student, result in local["results"].items():
        assert comparable(got[student]) == comparable(result), student
    assert {name: got[name]["status"] for name in EXPECTED} == {name: s for name, (s, _) in EXPECTED.items()}
    assert gradebook_scores(postgres.replace("postgresql://", "postgresql+psycopg://")) == local["gradebook"]
    assert csv_rows((tmp_path / "reports" / ASSIGNMENT / "student_scores.csv").read_text()) == csv_rows(local["csv"])
    assert not (tmp_path / "gradebook.db").exists()
    assert summary["workers"] == 3
    assert any(m.startswith("classgrader: Dask dashboard: http://127.0.0.1:") for m in messages), messages


def _in_its_sandbox(watcher, student: str) -> int | None:
    """The index of the worker whose thread runs ``student``'s task with its sandbox up now, if any.

    Asked of the workers themselves: the scheduler counts a task as processing from when it is
    assigned, and a worker may hold it behind the task it is running.
    """

    def probe(dask_worker) -> str | None:
        import psutil

        def sandbox(p: psutil.Process) -> bool:
            try:
                return p.name() == "bwrap"
            except psutil.NoSuchProcess:
                return False

        running = any(f"-{student}-" in str(ts.key) for ts in dask_worker.state.executing)
        up = running and any(sandbox(p) for p in psutil.Process().children(recursive=True))
        return str(dask_worker.name) if up else None

    for name in watcher.run(probe, on_error="return").values():
        if isinstance(name, str):
            return int(name.split("-")[1])
    return None


def _grade_killing_the_worker_of(
    cluster: ProcessCluster, student: str, submitted: Path, out: Path, messages: list[str]
) -> None:
    """Grade on ``cluster``; SIGKILL the worker while ``student``'s notebook runs in its sandbox on it."""
    from distributed import Client

    outcome: dict = {}

    def run() -> None:
        try:
            grade_class(
                REPO,
                ASSIGNMENT,
                submitted,
                out=out,
                settings=Settings(limits=LIMITS),
                progress=False,
                log=messages.append,
                analyse=False,
                cluster=cluster.address,
            )
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    killed = False
    thread = threading.Thread(target=run)
    thread.start()
    with Client(cluster.address, set_as_default=False) as watcher:
        deadline = time.monotonic() + WAIT_SECONDS
        while not killed and time.monotonic() < deadline and thread.is_alive():
            index = _in_its_sandbox(watcher, student)
            if index is not None:
                cluster.kill_worker(index)
                killed = True
            time.sleep(0.05)
    thread.join(timeout=WAIT_SECONDS)
    assert "error" not in outcome, outcome.get("error")
    assert killed, f"{student} was never seen running in a sandbox on a worker"


#: A small class for the faults: the long task to interrupt (the infinite loop runs to its 10 s limit) and
#: quick ones that show nothing else is lost or doubled. That a cluster grades every kind of bad notebook
#: as a local run does is the first test's claim, on the whole class.
FAULT_CLASS = ["infinite_loop", "solution", "blank", "truncated_json"]


def test_a_worker_killed_mid_task_loses_and_doubles_nothing(tmp_path, builder, local):
    """The worker running the infinite loop is killed: Dask runs that task again on the other worker;
    the run completes, each student has one submission and one grade per cell, equal to the local run's."""
    submitted = builder.write_submitted(
        tmp_path, FAULT_CLASS, solutions=REPO / "solutions", gradebook=tmp_path / "gradebook.db"
    )
    with ProcessCluster(workers=2) as cluster:
        _grade_killing_the_worker_of(cluster, "infinite_loop", submitted, tmp_path, [])
    got = results_of(tmp_path)
    assert set(got) == set(FAULT_CLASS)
    for student in FAULT_CLASS:
        assert comparable(got[student]) == comparable(local["results"][student]), student
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    assert gradebook_scores(url) == {s: local["gradebook"][s] for s in FAULT_CLASS}
    from nbgrader.api import Grade, Gradebook

    with Gradebook(url, course_id="sdpa-course") as gb:
        assert len(gb.assignment_submissions(ASSIGNMENT)) == len(FAULT_CLASS)
        assert gb.db.query(Grade).count() == len(FAULT_CLASS) * 4


def test_a_task_whose_workers_keep_dying_is_not_retried_forever(tmp_path, builder, local):
    """With Dask's allowed-failures at 0, one lost worker ends that task: it is reported as not graded,
    the tasks of the worker left are graded, and the next run (on that worker) grades the rest."""
    submitted = builder.write_submitted(
        tmp_path, FAULT_CLASS, solutions=REPO / "solutions", gradebook=tmp_path / "gradebook.db"
    )
    messages: list[str] = []
    with ProcessCluster(workers=2, allowed_failures=0) as cluster:
        _grade_killing_the_worker_of(cluster, "infinite_loop", submitted, tmp_path, messages)
        # Tasks on the same worker fail with it: on a busy machine Dask may have given it every task.
        failed = {
            m.split()[1]
            for m in messages
            if m.endswith(
                "not graded: the workers grading it died repeatedly (past Dask's allowed-failures); "
                "the next run tries again"
            )
        }
        assert "infinite_loop" in failed, messages
        graded = set(results_of(tmp_path))
        assert graded == set(FAULT_CLASS) - failed, messages
        again = grade_class(
            REPO,
            ASSIGNMENT,
            submitted,
            out=tmp_path,
            settings=Settings(limits=LIMITS),
            progress=False,
            log=quiet,
            analyse=False,
            cluster=cluster.address,
        )
    assert (again.reused, again.graded) == (len(graded), len(failed))
    got = results_of(tmp_path)
    assert set(got) == set(FAULT_CLASS)
    for student in FAULT_CLASS:
        assert comparable(got[student]) == comparable(local["results"][student]), student


def test_a_lost_scheduler_stops_the_run_and_the_next_run_resumes(tmp_path, builder, local):
    """Through the command line: the run stops with exit status 2 and says what is saved; the next run
    (on a new cluster) grades only the rest."""
    import subprocess
    import sys

    names = FAULT_CLASS
    submitted = builder.write_submitted(
        tmp_path, names, solutions=REPO / "solutions", gradebook=tmp_path / "gradebook.db"
    )
    results = tmp_path / "reports" / ASSIGNMENT / "results"
    with ProcessCluster(workers=1) as cluster:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "classgrader",
                ASSIGNMENT,
                str(submitted),
                "--course",
                str(REPO),
                "--out",
                str(tmp_path),
                "--timeout",
                str(LIMITS.wall_seconds),
                "--memory",
                "512m",
                "--quiet",
                "--cluster",
                cluster.address,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not list(results.glob("*.json")) and proc.poll() is None:
            time.sleep(0.05)
        cluster.kill_scheduler()
        _, err = proc.communicate(timeout=WAIT_SECONDS)
    first = {p.stem: json.loads(p.read_text())["graded_at"] for p in results.glob("*.json")}
    assert proc.returncode == 2, err
    dashboard = re.search(r"Dask dashboard: (\S+)", err)
    assert dashboard and urllib.parse.urlsplit(dashboard[1]).hostname == "127.0.0.1", err
    assert (
        f"went away: {len(first)} submissions of this run were graded and saved. Run the same command again" in err
    ), err
    assert 1 <= len(first) < len(names), first
    with ProcessCluster(workers=1) as cluster:
        again = grade_class(
            REPO,
            ASSIGNMENT,
            submitted,
            out=tmp_path,
            settings=Settings(limits=LIMITS),
            progress=False,
            log=quiet,
            analyse=False,
            cluster=cluster.address,
        )
    assert (again.reused, again.graded) == (len(first), len(names) - len(first))
    got = results_of(tmp_path)
    assert {s: r["graded_at"] for s, r in got.items() if s in first} == first  # not graded twice
    for student in names:
        assert comparable(got[student]) == comparable(local["results"][student]), student
    assert gradebook_scores(f"sqlite:///{tmp_path / 'gradebook.db'}") == {s: local["gradebook"][s] for s in names}


#: The course package's parts a worker's fingerprint hashes on their own, as the refusal names them.
PARTS = {"lib": "lib (the reference implementation)", "grading": "grading (the checks)"}


def test_a_worker_with_another_lib_or_checks_is_refused_before_grading(tmp_path, builder):
    """Each worker imports a copy of the package with one line added, one to ``lib``, one to ``grading``:
    the run stops before any task, and names each worker with its own difference alone."""
    from distributed import Client

    submitted = builder.write_submitted(tmp_path, ["solution", "blank"])
    with ProcessCluster(workers=0) as cluster:
        for package in PARTS:
            shadow = tmp_path / f"shadow-{package}"
            shutil.copytree(REPO / "sdpa_course", shadow / "sdpa_course", ignore=shutil.ignore_patterns("__pycache__"))
            init = shadow / "sdpa_course" / package / "__init__.py"
            init.write_text(init.read_text() + "\n# changed on this worker only\n")
            cluster.add_worker(env={"PYTHONPATH": str(shadow)})
        cluster.wait_for_workers(len(PARTS))
        with Client(cluster.address, set_as_default=False) as client:
            address = {w["name"]: a for a, w in client.scheduler_info(n_workers=-1)["workers"].items()}
        with pytest.raises(ClusterError, match="refusing to grade: 2 of 2 workers differ") as refused:
            grade_class(
                REPO,
                ASSIGNMENT,
                submitted,
                out=tmp_path / "out",
                settings=Settings(limits=LIMITS),
                progress=False,
                log=quiet,
                analyse=False,
                cluster=cluster.address,
            )
    lines = str(refused.value).splitlines()
    for n, what in enumerate(PARTS.values()):
        [said] = [line for line in lines if line.strip().startswith(f"{address[f'worker-{n}']} (")]
        assert f"{what}: hash" in said, lines
        assert all(other not in said for other in PARTS.values() if other != what), lines
    assert not (tmp_path / "out" / "reports" / ASSIGNMENT / "results").exists()
    assert gradebook_scores(f"sqlite:///{tmp_path / 'out' / 'gradebook.db'}") == {}


def test_the_refusal_names_each_difference():
    from classgrader.pipeline.dask_cluster import differences

    here = {
        "python": "CPython 3.11",
        "machine": "x86_64",
        "packages": {"numpy": "2.0.1", "dask": "2026.8.0"},
        "lib": "a" * 64,
        "grading": "b" * 64,
        "classgrader": "c" * 64,
        "sandbox": None,
    }
    assert differences(here, dict(here)) == []
    worker = {**here, "packages": {"numpy": "1.26.4"}, "grading": "d" * 64, "sandbox": "bwrap: no permission"}
    said = differences(here, worker)
    assert said == [
        "grading (the checks): hash dddddddddddd on the worker, hash bbbbbbbbbbbb here",
        "pinned packages differ: dask absent on the worker, 2026.8.0 here; numpy 1.26.4 on the worker, 2.0.1 here",
        "it cannot start a sandbox: bwrap: no permission",
    ]


def _another_process(folder: Path):
    """A child process that takes a slot in ``folder`` when asked (the returned call), says which, and ends.

    Forked now, before the caller holds any slot, so the child shares no slot of the caller's memory;
    forked rather than started afresh, as importing the grader again would cost seconds.
    """
    from classgrader.pipeline.dask_cluster import machine_slot

    go_read, go_write = os.pipe()
    said_read, said_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child leaves by os._exit: the exit handlers it inherited are the test run's
        status = 1
        try:
            os.read(go_read, 1)
            with machine_slot(folder) as slot:
                os.write(said_write, str(slot).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(go_read)
    os.close(said_write)

    def take() -> int:
        os.write(go_write, b"x")
        with os.fdopen(said_read) as said:
            slot = said.read()
        _, status = os.waitpid(pid, 0)
        os.close(go_write)
        assert os.waitstatus_to_exitcode(status) == 0 and slot, (status, slot)
        return int(slot)

    return take


def test_each_running_sandbox_on_a_machine_holds_its_own_slot(tmp_path):
    """Slots (sandbox uids) are exclusive across the processes of one machine, and freed at exit."""
    from classgrader.pipeline.dask_cluster import machine_slot

    other, again = _another_process(tmp_path), _another_process(tmp_path)
    with machine_slot(tmp_path) as first:
        with machine_slot(tmp_path) as second:
            seen_by_other = other()
        seen_again = again()
    assert (first, second, seen_by_other, seen_again) == (0, 1, 2, 1)
