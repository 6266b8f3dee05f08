"""A Dask scheduler and workers on this machine, each its own process, on 127.0.0.1 only.

For the tests and the benchmark of ``./course grade --cluster``, and to try
the cluster mode on one machine::

    with ProcessCluster(workers=2) as cluster:
        grade_class(..., cluster=cluster.address)

The processes are started with Dask's own command-line programs (``dask
scheduler``, ``dask worker``), as on a real cluster; each worker is
single-threaded and has no nanny, so killing its process (:meth:`kill_worker`)
is a lost machine. The scheduler's dashboard listens on 127.0.0.1 too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class ProcessCluster:
    """A scheduler and ``workers`` worker processes; a context manager that stops them all."""

    def __init__(
        self,
        workers: int = 2,
        *,
        threads: int = 1,
        env: dict[str, str] | None = None,
        startup: float = 120.0,
        allowed_failures: int | None = None,
    ):
        self._tmp = tempfile.TemporaryDirectory(prefix="classgrader-cluster-")
        self.folder = Path(self._tmp.name)
        self.scheduler_file = self.folder / "scheduler.json"
        self.threads = threads
        # Every process's temporary files (a worker's sandboxes and bytecode) go in this folder, so
        # closing the cluster removes what a killed process leaves. Others may enter it, as /tmp.
        os.chmod(self.folder, 0o755)
        (self.folder / "tmp").mkdir(mode=0o755)
        self.env = {**os.environ, **(env or {}), "TMPDIR": str(self.folder / "tmp")}
        self.startup = startup
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        try:
            self._start_scheduler(allowed_failures)
            # The workers start at once (each waits for the scheduler's file), so all import side by side.
            for _ in range(workers):
                self.add_worker()
            self._wait_for_scheduler()
            self.wait_for_workers(workers)
        except BaseException:
            self.close()
            raise

    def _program(self, name: str) -> list[str]:
        return [sys.executable, "-m", "distributed.cli.dask_" + name]

    def _log(self, name: str):
        return open(self.folder / f"{name}.log", "ab")

    def _start_scheduler(self, allowed_failures: int | None) -> None:
        env = dict(self.env)
        if allowed_failures is not None:
            env["DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"] = str(allowed_failures)
        with self._log("scheduler") as log:
            self.scheduler = subprocess.Popen(
                [
                    *self._program("scheduler"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--dashboard-address",
                    "127.0.0.1:0",
                    "--scheduler-file",
                    str(self.scheduler_file),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.folder,
                start_new_session=True,
            )

    def _wait_for_scheduler(self) -> None:
        assert self.scheduler is not None
        deadline = time.monotonic() + self.startup
        while not self._address():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the Dask scheduler did not start:\n" + self.log("scheduler")[-3000:])
            time.sleep(0.1)

    def _address(self) -> str | None:
        try:
            return json.loads(self.scheduler_file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            return None

    @property
    def address(self) -> str:
        """The scheduler's address, ``tcp://127.0.0.1:PORT``."""
        address = self._address()
        assert address is not None
        return address

    def add_worker(self, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start one more worker process (with ``env`` added to its environment)."""
        n = len(self.workers)
        with self._log(f"worker-{n}") as log:
            proc = subprocess.Popen(
                [
                    *self._program("worker"),
                    "--scheduler-file",
                    str(self.scheduler_file),
                    "--host",
                    "127.0.0.1",
                    "--nthreads",
                    str(self.threads),
                    "--nworkers",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--local-directory",
                    str(self.folder / f"worker-{n}"),
                    "--name",
                    f"worker-{n}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**self.env, **(env or {})},
                cwd=self.folder,
                start_new_session=True,
            )
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, n: int) -> None:
        """Wait until ``n`` workers have registered with the scheduler (read from the worker logs)."""
        deadline = time.monotonic() + self.startup
        while True:
            ready = sum("Registered to:" in self.log(f"worker-{i}") for i in range(len(self.workers)))
            if ready >= n:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"only {ready} of {n} Dask workers started:\n"
                    + "\n".join(self.log(f"worker-{i}")[-1500:] for i in range(len(self.workers)))
                )
            time.sleep(0.1)

    def log(self, name: str) -> str:
        """What a process (``scheduler`` or ``worker-N``) has printed so far."""
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def kill_worker(self, index: int) -> None:
        """SIGKILL a worker process (and its sandboxes, which die with their parent): a lost machine."""
        _kill(self.workers[index])

    def kill_scheduler(self) -> None:
        """SIGKILL the scheduler: the cluster is gone."""
        if self.scheduler is not None:
            _kill(self.scheduler)

    def close(self) -> None:
        for proc in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            _kill(proc)
        self._tmp.cleanup()

    def __enter__(self) -> ProcessCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
