"""One class of bad submissions of hw2, graded once for the whole test run.

``tests/test_class_grading.py`` and ``tests/test_class_grading_cluster.py``
both read the same graded class: every fixture of
``devtools.sample_submissions.EXPECTED`` plus a roster student who sent
nothing, graded locally with short limits while a listener on 127.0.0.1
counts the connections the sandboxes make. Grading it is the costliest step
of either file, so it happens once: under pytest-xdist the first worker to
ask grades it in a folder every worker of the run sees (the parent of the
workers' own temporary folders), holding a file lock; the others wait on the
lock and read what it wrote. A test that writes into that folder holds the
same lock (:func:`holding`) so that no other worker reads it half-written.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.homework import submissions as corpus

from classgrader import sandbox
from classgrader.pipeline.class_run import grade_class
from classgrader.stages.grade import Settings
from devtools.sample_submissions import EXPECTED, Builder

REPO = Path(__file__).resolve().parent.parent
# Hidden-test seeds come from the course secret (sdpa_course/grading/seeds.py): the corpus's
# secret, so the class grader sees the same inputs as the in-process tests.
os.environ["COURSE_GRADING_SECRET"] = corpus.TEST_SECRET
ASSIGNMENT = "hw2_stable_softmax"
WALL = 10.0
LIMITS = sandbox.Limits(wall_seconds=WALL, memory_bytes=512 * 1024**2)
ROSTER = ["absent_student"]


def quiet(*args, **kwargs):
    pass


class Listener:
    """A TCP server on the host's 127.0.0.1 that records every connection."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


@contextlib.contextmanager
def holding(folder: Path) -> Iterator[None]:
    """The shared class's lock, held by one process at a time (``folder`` is the one :func:`graded_class` gives)."""
    with open(folder.parent / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _grade(root: Path) -> dict[str, Any]:
    """Grade the class into ``root``; return what the tests read besides its files."""
    shutil.rmtree(root, ignore_errors=True)  # what a failed attempt left
    root.mkdir(parents=True)
    listener = Listener()
    try:
        submitted = Builder(REPO, ASSIGNMENT).write_submitted(
            root, EXPECTED, solutions=REPO / "solutions", gradebook=root / "gradebook.db", port=listener.port
        )
        started = time.monotonic()
        summary = grade_class(
            REPO,
            ASSIGNMENT,
            submitted,
            out=root,
            workers=2,
            settings=Settings(limits=LIMITS),
            roster=ROSTER,
            progress=False,
            log=quiet,
            analyse=False,  # the item analysis is tested on its own (tests/test_item_analysis.py)
        )
        seconds = time.monotonic() - started
    finally:
        listener.close()
    return {
        "summary": json.loads(json.dumps(dict(summary), default=str)),
        "accepted": listener.accepted,
        "seconds": seconds,
        "submitted": str(submitted),
    }


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory) -> dict[str, Any]:
    """The graded class: ``root`` (its folder: submitted files, gradebook, reports), ``submitted``,
    ``summary`` (what :func:`grade_class` returned, as JSON), ``accepted`` (connections the listener
    saw) and ``seconds`` (how long the grading took)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "graded-class"  # one folder for every worker
    else:
        shared = tmp_path_factory.getbasetemp() / "graded-class"
    shared.mkdir(exist_ok=True)
    root = shared / "class"
    record = shared / "graded.json"
    with holding(root):
        if not record.exists():
            record.write_text(json.dumps(_grade(root)))
        facts = json.loads(record.read_text())
    return {**facts, "root": root, "submitted": Path(facts["submitted"])}
