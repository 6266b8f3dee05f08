"""One sandbox per submission, serving its jobs one after another, and what each job reported.

The driver goes into ``/grader`` beside the files the caller gives
(:mod:`classgrader.sandbox.command` builds the sandbox around it). One
sandbox serves one submission (:class:`Session`): the driver in it imports
IPython and numpy once, then runs each job (the scoring run, then the record
run) in a process of its own, forked before any learner code exists; files a
later job needs (the record run's ``lib``) appear in ``/grader/.run`` only
when that job starts. What comes back is read through pipes with hard size
caps; how each job's process ended comes on a pipe of its own that no job's
process holds.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from classgrader.records import Job
from classgrader.sandbox.bytecode import pycache_binds
from classgrader.sandbox.command import DRIVER_FILES, GRADER_DIR, RUN_DIR, bwrap_command
from classgrader.sandbox.limits import Limits
from classgrader.sandbox.mode import resolve


@dataclasses.dataclass
class RunOutcome:
    """What a sandboxed run reported (events, see :mod:`classgrader.records`) and how it ended."""

    events: list[dict[str, Any]]  # as the driver wrote them: untrusted, check before use
    returncode: int | None
    signal: int | None
    timed_out: bool  # killed by the grader at the wall limit
    result_overflow: bool
    log: str
    seconds: float
    mode: str = "none"  # the sandbox mode it ran in (root, userns), "none" without a sandbox
    started: float = 0.0  # host's monotonic clock: the sandbox's spawn (first job) or the job's dispatch


class Registry:
    """Process groups of running sandboxes, so an interrupt can kill them all."""

    def __init__(self) -> None:
        self._pids: set[int] = set()

    def add(self, pid: int) -> None:
        self._pids.add(pid)

    def discard(self, pid: int) -> None:
        self._pids.discard(pid)

    def kill_all(self) -> None:
        for pid in list(self._pids):
            _kill_group(pid)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(
    job: Job,
    grader_files: dict[str, Path],
    limits: Limits,
    *,
    uid: int,
    extra_files: dict[str, Path] | None = None,
    sandboxed: bool = True,
    registry: Registry | None = None,
    mode: str = "auto",
) -> RunOutcome:
    """Run the driver on one ``job`` in a sandbox of its own and return what it reported, within ``limits``.

    ``grader_files`` (path in ``/grader`` -> file) are the packages the job
    needs, e.g. ``grading``; the driver's own files are added. ``mode`` is the
    sandbox mode (``root``, ``userns``, or ``auto``: see
    :func:`classgrader.sandbox.mode.check_available`).
    """
    with Session(
        grader_files, limits, uid=uid, extra_files=extra_files, sandboxed=sandboxed, registry=registry, mode=mode
    ) as session:
        return session.run(job)


@dataclasses.dataclass
class _Received:
    """What one job has sent back so far: its events and log within their caps, and how it ended."""

    result: bytearray = dataclasses.field(default_factory=bytearray)
    log: bytearray = dataclasses.field(default_factory=bytearray)
    control: bytearray = dataclasses.field(default_factory=bytearray)
    overflow: bool = False
    timed_out: bool = False
    exitcode: int | None = None  # as the serving driver reported it; None while the job runs

    def add_result(self, chunk: bytes, cap: int) -> bool:
        """Keep ``chunk`` of the event stream; False (an overflow) when it would pass ``cap``."""
        if len(self.result) + len(chunk) > cap:
            self.overflow = True
            return False
        self.result += chunk
        return True

    def add_log(self, chunk: bytes, cap: int) -> None:
        self.log += chunk[: max(cap - len(self.log), 0)]


class Session:
    """One sandbox for one submission, whose jobs run one after another, each in a fresh process.

    The sandbox (namespaces, binds, limits) is made once, on entering; the
    driver in it imports IPython and numpy, then forks one process per job
    (see :mod:`classgrader.sandbox.driver`), so that a submission's second run does not
    pay for the interpreter and those imports again. Each job's process starts
    from that state, with no learner code before it, and has its own time
    budget (``limits.wall_seconds``, from its dispatch), result cap and log.
    ``files`` given to :meth:`run` appear for that job and the later ones
    only: a job never sees a package handed to a job after it.

    A job that overruns its time, or writes past the result cap, ends the
    whole sandbox: the serving driver is still waiting for that job's process
    and the shared result pipe still holds what it wrote, so killing the
    sandbox's process group is the one clean stop. A later :meth:`run` then
    reports that without running. Arguments as :func:`run`.
    """

    def __init__(
        self,
        grader_files: dict[str, Path],
        limits: Limits,
        *,
        uid: int,
        extra_files: dict[str, Path] | None = None,
        sandboxed: bool = True,
        registry: Registry | None = None,
        mode: str = "auto",
    ) -> None:
        self.grader_files = {**grader_files, **DRIVER_FILES}
        self.limits = limits
        self.uid = uid
        self.extra_files = extra_files or {}
        self.sandboxed = sandboxed
        self.registry = registry
        self.mode = mode
        self.jobs = 0
        self.ended = False  # the sandbox has gone (killed, or died)

    def __enter__(self) -> Session:
        self._tmp = tempfile.TemporaryDirectory(prefix="classgrader-job-")
        tmpdir = Path(self._tmp.name)
        os.chmod(tmpdir, 0o755)
        self.run_dir = tmpdir / "run"
        self.run_dir.mkdir(mode=0o755)
        os.chmod(self.run_dir, 0o755)
        control_r, control_w = os.pipe()
        try:  # the folder and the pipe go with a sandbox that cannot start (no bwrap, a mode refused)
            cmd, cwd, env = self._command(tmpdir, control_w)
            self.started = time.monotonic()
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd=cwd,
                env=env,
                pass_fds=(control_w,),
            )
        except BaseException:
            os.close(control_r)
            self._tmp.cleanup()
            raise
        finally:
            os.close(control_w)
        self.control = control_r
        if self.registry is not None:
            self.registry.add(self.proc.pid)
        assert self.proc.stdout is not None and self.proc.stderr is not None  # both are pipes
        self.sel = selectors.DefaultSelector()
        for fd, what in (
            (self.proc.stdout.fileno(), "result"),
            (self.proc.stderr.fileno(), "log"),
            (control_r, "control"),
        ):
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ, what)
        return self

    def _command(self, tmpdir: Path, control_w: int) -> tuple[list[str], Path | None, dict[str, str] | None]:
        """(command line, working directory, environment) of the serving driver; sets where jobs see their files."""
        if self.sandboxed:
            self.mode = resolve(self.mode)
            cmd = bwrap_command(
                self.run_dir, self.grader_files, self.extra_files, self.limits, self.uid, self.mode, control_w
            )
            self.inside, self.sys_path = RUN_DIR, [GRADER_DIR]
            return cmd, None, None
        # Trusted trial run: the same driver, the grader's files copied beside the jobs.
        for rel, src in self.grader_files.items():
            dest = tmpdir / "grader" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
        work = tmpdir / "work"
        work.mkdir()
        for name, src in self.extra_files.items():
            shutil.copy2(src, work / name)
        driver = tmpdir / "grader" / "driver.py"
        cmd = [sys.executable, "-I", "-X", "utf8", str(driver), "--serve", str(self.run_dir), str(control_w)]
        self.inside, self.sys_path = str(self.run_dir), [str(tmpdir / "grader")]
        self.mode = "none"
        return cmd, work, _plain_env(tmpdir)

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc.stdin is not None:
                try:
                    self.proc.stdin.close()  # the driver's end of input: it exits
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_group(self.proc.pid)
                self.proc.wait()
        finally:
            if self.proc.poll() is None:
                _kill_group(self.proc.pid)
                self.proc.wait()
            self.sel.close()
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
            os.close(self.control)
            if self.registry is not None:
                self.registry.discard(self.proc.pid)
            self._tmp.cleanup()

    def _add_files(self, files: dict[str, Path]) -> str:
        """Copy packages (path under the package folder -> source) in, with their bytecode; their folder inside."""
        host, inside = self.run_dir / "pkgs", f"{self.inside}/pkgs"
        for rel, src in files.items():
            dest = host / rel
            dest.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            shutil.copy2(src, dest)  # keeps the time the bytecode was compiled against
            os.chmod(dest, 0o644)
        for where, pyc in pycache_binds(files, inside).items():
            dest = host / Path(where).relative_to(inside)
            dest.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            shutil.copyfile(pyc, dest)
            os.chmod(dest, 0o644)
        for folder in [host, *host.rglob("*")]:
            if folder.is_dir():
                os.chmod(folder, 0o755)
        return inside

    def run(self, job: Job, files: dict[str, Path] | None = None) -> RunOutcome:
        """Run one job in a fresh process of this sandbox; ``files`` are packages this job (and later ones) import."""
        dispatched = self.started if self.jobs == 0 else time.monotonic()
        self.jobs += 1
        if self.ended:
            return self._outcome(_Received(), since=dispatched)
        name = self._dispatch(job, files)
        got = self._collect(name)
        if got.exitcode is not None:  # the job's process has ended: take what it wrote before
            self._drain(got)
        if got.exitcode is None or got.overflow or got.timed_out:
            self._end_sandbox(killed=got.overflow or got.timed_out)
            got.exitcode = None
        return self._outcome(got, since=dispatched)

    def _dispatch(self, job: Job, files: dict[str, Path] | None) -> str:
        """Write the job (with this sandbox's limits) into the jobs folder and name it to the driver."""
        job = job.copy()
        job["wall"], job["cell_share"] = self.limits.wall_seconds, self.limits.cell_share
        job["cell_output_chars"] = self.limits.cell_output_chars
        job["sys_path"] = [*self.sys_path, *([self._add_files(files)] if files else [])]
        name = f"{self.jobs}-{job.get('mode', 'score')}.json"
        path = self.run_dir / name
        path.write_text(json.dumps(job))
        os.chmod(path, 0o644)
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"{name}\n".encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the sandbox has gone: what it said is read below
        return name

    def _collect(self, name: str) -> _Received:
        """Read the pipes until the driver reports job ``name`` ended, the time is up or the result cap is passed."""
        got = _Received()
        deadline = time.monotonic() + self.limits.wall_seconds
        while got.exitcode is None and self.sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                got.timed_out = True
                break
            for key, _ in self.sel.select(timeout=min(remaining, 0.5)):
                chunk = self._read(key.fd)
                if chunk is None:
                    continue
                if not chunk:
                    self.sel.unregister(key.fd)
                elif key.data == "result":
                    if not got.add_result(chunk, self.limits.result_bytes):
                        break
                elif key.data == "log":
                    got.add_log(chunk, self.limits.log_bytes)
                else:
                    got.control += chunk
                    got.exitcode = _exit_of(got.control, name)
            if got.overflow:
                break
        return got

    def _drain(self, got: _Received) -> None:
        """Take what the ended job's process wrote before its end was reported, within the caps."""
        for key in list(self.sel.get_map().values()):
            while key.data != "control" and (chunk := self._read(key.fd)):
                if key.data == "result":
                    if not got.add_result(chunk, self.limits.result_bytes):
                        break
                else:
                    got.add_log(chunk, self.limits.log_bytes)
                    if len(got.log) >= self.limits.log_bytes:
                        break  # the log is full; whatever is still coming is not kept anyway

    @staticmethod
    def _read(fd: int) -> bytes | None:
        try:
            return os.read(fd, 65536)
        except BlockingIOError:
            return None

    def _end_sandbox(self, killed: bool) -> None:
        """Kill the sandbox (time or result cap), or wait for one that is ending by itself."""
        self.ended = True
        if killed:
            _kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=None if killed else self.limits.wall_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(self.proc.pid)
            self.proc.wait()

    def _outcome(self, got: _Received, *, since: float) -> RunOutcome:
        returncode, sig = self._ending(got.exitcode)
        return RunOutcome(
            events=_events(got.result),
            returncode=returncode,
            signal=sig,
            timed_out=got.timed_out,
            result_overflow=got.overflow,
            log=bytes(got.log).decode("utf-8", "replace"),
            seconds=round(time.monotonic() - since, 3),
            mode=self.mode,
            started=since,
        )

    def _ending(self, exitcode: int | None) -> tuple[int | None, int | None]:
        """(return code, signal) of a job: from the driver's report, or from the sandbox's own end."""
        if exitcode is None:  # the sandbox itself ended: how it did
            rc = self.proc.returncode
            return (rc if rc is not None and rc >= 0 else None), (-rc if rc is not None and rc < 0 else None)
        if exitcode >= 0:
            return exitcode, None
        if self.sandboxed:  # a job's process killed by signal N: 128 + N, as bwrap reports its child's end
            return 128 - exitcode, None
        return None, -exitcode


def _events(result: bytearray) -> list[dict[str, Any]]:
    """The JSON objects of the event stream, one a line; anything else is skipped."""
    events = []
    for line in bytes(result).split(b"\n"):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _exit_of(control: bytearray, job: str) -> int | None:
    """The exit code the serving driver reported for ``job`` (see ExitEvent), once its line is whole."""
    for line in bytes(control).split(b"\n")[:-1]:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "exit" and event.get("job") == job:
            code = event.get("exitcode")
            return code if isinstance(code, int) else 1
    return None


def _plain_env(tmpdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(
        MPLBACKEND="Agg",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        HOME=str(tmpdir / "work"),
        MPLCONFIGDIR=str(tmpdir / "mpl"),
    )
    return env
