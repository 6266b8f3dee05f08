"""Run one submission's code in a bubblewrap sandbox, with time and memory limits.

The sandbox (see :func:`bwrap_command`) is built from these pieces:

* **namespaces**: new mount, PID, network, IPC and UTS namespaces
  (``bwrap --unshare-*``). The network namespace holds only a loopback
  interface that nothing else shares, so the learner's code reaches no host,
  not even services on the grader's own 127.0.0.1.
* **a filesystem of read-only binds**: ``/usr``, the Python installation and
  the virtual environment's packages, with the project's editable install
  masked, so ``lib`` does not exist inside. Nothing else of the host is
  visible: no ``solutions/``, no gradebook, no other submission, no ``/etc``,
  no home directory. The only writable place is a size-limited tmpfs at
  ``/tmp`` (the learner's scratch folder, also ``$HOME``), discarded at exit.
* **an unprivileged user**, in one of two modes (:mod:`classgrader.sandbox.mode`
  picks one): as root, bwrap builds the mounts with root's rights, then
  ``setpriv`` switches to a uid that owns nothing on the host, clears every
  capability, the bounding set and supplementary groups, and sets
  ``no_new_privs``, so root's rights cannot be used to undo a bind; as any
  user, bwrap's unprivileged mode builds them in a new user namespace where
  the process has a uid of its own, no capabilities and ``no_new_privs``,
  and may create no further user namespace.
* **resource limits** (``prlimit``): address space (memory), CPU seconds,
  number of processes, file size, open files, no core dumps. In the
  user-namespace mode they are set inside the namespace, so the process count
  is the sandbox's own, not that of every process of the grader's uid.
* **a wall-time limit**: the grader kills the sandbox's process group when the
  time is up; ``--die-with-parent`` and the PID namespace take every process
  started inside with it.

The driver goes into ``/grader`` beside the files the caller gives. One
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
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from classgrader.records import Job
from classgrader.sandbox.bytecode import pycache_binds
from classgrader.sandbox.mode import SandboxUnavailable as SandboxUnavailable  # raised here, defined there
from classgrader.sandbox.mode import resolve

DRIVER = Path(__file__).with_name("driver.py")
#: The program that runs in the sandbox (it imports nothing of the grader's).
DRIVER_FILES = {"driver.py": DRIVER}
SANDBOX_HOME = "/tmp"
GRADER_DIR = "/grader"
#: Jobs, and the packages a later job adds: a folder of the grader's, bound read-only.
RUN_DIR = f"{GRADER_DIR}/.run"
# Every namespace but the user namespace: in root mode bwrap runs as root and
# setpriv then switches to a real unprivileged uid of the host (a user
# namespace would map that uid back to root outside).
NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try")


#: The system, read-only, with a fresh /proc and a minimal /dev: what every sandbox (and the probe) sees first.
SYSTEM_FS = (
    *("--ro-bind", "/usr", "/usr"),
    *("--symlink", "usr/bin", "/bin"),
    *("--symlink", "usr/sbin", "/sbin"),
    *("--symlink", "usr/lib", "/lib"),
    *("--symlink", "usr/lib64", "/lib64"),
    *("--proc", "/proc"),
    *("--dev", "/dev"),
)


def namespace_args(mode: str, uid: int) -> list[str]:
    """bwrap's namespace options for ``mode``: in ``userns`` mode a user namespace where the process is ``uid``."""
    if mode == "userns":
        return [
            *NAMESPACES,
            "--unshare-user",
            "--uid",
            str(uid),
            "--gid",
            str(uid),
            "--disable-userns",
            "--cap-drop",
            "ALL",
        ]
    return list(NAMESPACES)


@dataclasses.dataclass(frozen=True)
class Limits:
    wall_seconds: float = 60.0
    memory_bytes: int = 2 * 1024**3
    scratch_bytes: int = 64 * 1024**2
    max_processes: int = 64
    max_file_bytes: int = 32 * 1024**2
    result_bytes: int = 16 * 1024**2  # the JSON event stream
    log_bytes: int = 64 * 1024  # raw fd-level output kept for the record
    cell_output_chars: int = 10_000  # output kept per stream and cell
    cell_share: float = 0.5  # the share of the wall time that the notebook's own cells may use


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


def _python_paths() -> tuple[Path, Path, Path]:
    """(Python installation, virtual environment, its site-packages)."""
    base = Path(sys.base_prefix).resolve()
    venv = Path(sys.prefix).resolve()
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    return base, venv, site


def _project_pth_files(site: Path) -> list[Path]:
    """``.pth`` files that would put the project (``lib``, ``grading``...) on sys.path."""
    hits = []
    for pth in sorted(site.glob("*.pth")):
        try:
            text = pth.read_text(errors="replace")
        except OSError:
            continue
        if "__editable__" in pth.name or "__editable__" in text or "sdpa" in pth.name:
            hits.append(pth)
    hits += sorted(site.glob("__editable__*finder.py"))
    return hits


def _parents(path: Path) -> list[str]:
    parts = []
    for parent in reversed(path.parents):
        if str(parent) != "/":
            parts.append(str(parent))
    return parts


def check_available(mode: str = "auto") -> str:
    """The sandbox mode that works here (``root`` or ``userns``, see :mod:`classgrader.sandbox.mode`).

    ``mode`` is ``auto`` or one of them. Raises :class:`SandboxUnavailable`
    with a clear message (the package to install, the sysctl to change)
    unless a sandbox can start.
    """
    return resolve(mode)


def bwrap_command(
    run_dir: Path,
    grader_files: dict[str, Path],
    extra_files: dict[str, Path],
    limits: Limits,
    uid: int,
    mode: str = "root",
    control_fd: int = 3,
) -> list[str]:
    """The full command line: root mode prlimit -> bwrap -> setpriv -> python driver;
    ``userns`` mode bwrap -> prlimit -> python driver. The driver serves the jobs
    written to ``run_dir`` (bound read-only at :data:`RUN_DIR`) and reports how
    each ended on ``control_fd``."""
    base, venv, site = _python_paths()
    cpu = int(limits.wall_seconds) + 5
    rlimits = [
        "prlimit",
        f"--as={limits.memory_bytes}",
        f"--cpu={cpu}",
        f"--nproc={limits.max_processes}",
        f"--fsize={limits.max_file_bytes}",
        "--nofile=256",
        "--core=0",
        "--",
    ]
    cmd = [
        *(rlimits if mode == "root" else []),
        "bwrap",
        *namespace_args(mode, uid),
        "--die-with-parent",
        "--new-session",
        *SYSTEM_FS,
    ]
    # The scratch tmpfs comes first: mounted later, it would hide a Python or a
    # virtual environment that lives under /tmp (a clone in /tmp, say).
    cmd += ["--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", SANDBOX_HOME]
    made = {SANDBOX_HOME}
    for root in (base, venv):
        for parent in _parents(root):
            if parent not in made:
                cmd += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    cmd += ["--ro-bind", str(base), str(base)]
    if venv != base:
        cmd += ["--ro-bind", str(venv), str(venv)]
    for pth in _project_pth_files(site):
        cmd += ["--ro-bind", "/dev/null", str(pth)]
    cmd += ["--perms", "0755", "--dir", GRADER_DIR]
    # The grader's modules with their bytecode beside them (compiled once by the grader: see bytecode.py).
    binds = {f"{GRADER_DIR}/{rel}": src for rel, src in grader_files.items()}
    binds.update(pycache_binds({rel: src for rel, src in grader_files.items() if rel != "driver.py"}, GRADER_DIR))
    for dest, src in sorted(binds.items()):
        for parent in _parents(Path(dest)):
            if parent not in made and parent.startswith(GRADER_DIR + "/"):
                cmd += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        cmd += ["--ro-bind", str(src), dest]
    for name, src in sorted(extra_files.items()):
        cmd += ["--ro-bind", str(src), f"{SANDBOX_HOME}/{name}"]
    cmd += ["--ro-bind", str(run_dir), RUN_DIR]
    cmd += [
        "--clearenv",
        "--setenv",
        "HOME",
        SANDBOX_HOME,
        "--setenv",
        "PATH",
        f"{venv}/bin:/usr/bin:/bin",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "MPLBACKEND",
        "Agg",
        "--setenv",
        "MPLCONFIGDIR",
        f"{SANDBOX_HOME}/.matplotlib",
        "--setenv",
        "OPENBLAS_NUM_THREADS",
        "1",
        "--setenv",
        "OMP_NUM_THREADS",
        "1",
        "--setenv",
        "MKL_NUM_THREADS",
        "1",
        "--setenv",
        "PYTHONHASHSEED",
        "0",
        "--setenv",
        "PYDEVD_DISABLE_FILE_VALIDATION",
        "1",
        "--chdir",
        SANDBOX_HOME,
    ]
    if mode == "root":
        cmd += [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    else:
        cmd += rlimits
    cmd += [
        f"{venv}/bin/python",
        "-I",
        "-X",
        "utf8",
        f"{GRADER_DIR}/driver.py",
        "--serve",
        RUN_DIR,
        str(control_fd),
        "--pid-namespace",
    ]
    return cmd


class Registry:
    """Process groups of running sandboxes, so an interrupt can kill them all."""

    def __init__(self):
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
    sandbox mode (``root``, ``userns``, or ``auto``: see :func:`check_available`).
    """
    with Session(
        grader_files, limits, uid=uid, extra_files=extra_files, sandboxed=sandboxed, registry=registry, mode=mode
    ) as session:
        return session.run(job)


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
    whole sandbox (as it ended the sandbox of a single run before); a later
    :meth:`run` then reports that without running. Arguments as :func:`run`.
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
    ):
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
        if self.sandboxed:
            self.mode = resolve(self.mode)
            cmd = bwrap_command(
                self.run_dir, self.grader_files, self.extra_files, self.limits, self.uid, self.mode, control_w
            )
            self.inside, self.sys_path, cwd, env = RUN_DIR, [GRADER_DIR], None, None
        else:
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
            self.inside, self.sys_path, cwd, env = str(self.run_dir), [str(tmpdir / "grader")], work, _plain_env(tmpdir)
            self.mode = "none"
        self.started = time.monotonic()
        try:
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
            return self._outcome([], bytearray(), timed_out=False, overflow=False, exitcode=None, since=dispatched)
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
        result_buf, log_buf, control_buf = bytearray(), bytearray(), bytearray()
        overflow = timed_out = False
        exitcode: int | None = None
        deadline = time.monotonic() + self.limits.wall_seconds
        while exitcode is None and self.sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in self.sel.select(timeout=min(remaining, 0.5)):
                chunk = self._read(key.fd)
                if chunk is None:
                    continue
                if not chunk:
                    self.sel.unregister(key.fd)
                elif key.data == "result":
                    if len(result_buf) + len(chunk) > self.limits.result_bytes:
                        overflow = True
                        break
                    result_buf += chunk
                elif key.data == "log":
                    log_buf += chunk[: max(self.limits.log_bytes - len(log_buf), 0)]
                else:
                    control_buf += chunk
                    exitcode = _exit_of(control_buf, name)
            if overflow:
                break
        if exitcode is not None:  # the job's process has ended: take what it wrote before
            for key in list(self.sel.get_map().values()):
                while key.data != "control" and (chunk := self._read(key.fd)):
                    if key.data == "result":
                        if len(result_buf) + len(chunk) > self.limits.result_bytes:
                            overflow = True
                            break
                        result_buf += chunk
                    else:
                        log_buf += chunk[: max(self.limits.log_bytes - len(log_buf), 0)]
                        if len(log_buf) >= self.limits.log_bytes:
                            break  # the log is full; whatever is still coming is not kept anyway
        if exitcode is None or overflow or timed_out:
            self._end_sandbox(killed=overflow or timed_out)
            exitcode = None
        return self._outcome(
            result_buf, log_buf, timed_out=timed_out, overflow=overflow, exitcode=exitcode, since=dispatched
        )

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

    def _outcome(self, result_buf, log_buf, *, timed_out, overflow, exitcode, since) -> RunOutcome:
        events = []
        for line in bytes(result_buf).split(b"\n"):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(event, dict):
                events.append(event)
        if exitcode is None:  # the sandbox itself ended: how it did
            rc = self.proc.returncode
            returncode, sig = (rc if rc is not None and rc >= 0 else None), (-rc if rc is not None and rc < 0 else None)
        elif exitcode >= 0:
            returncode, sig = exitcode, None
        elif self.sandboxed:  # a job's process killed by signal N: 128 + N, as bwrap reports its child's end
            returncode, sig = 128 - exitcode, None
        else:
            returncode, sig = None, -exitcode
        return RunOutcome(
            events=events,
            returncode=returncode,
            signal=sig,
            timed_out=timed_out,
            result_overflow=overflow,
            log=bytes(log_buf).decode("utf-8", "replace"),
            seconds=round(time.monotonic() - since, 3),
            mode=self.mode,
            started=since,
        )


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
