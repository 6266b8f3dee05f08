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
* **an unprivileged user**, in one of two modes (:mod:`classgrader.sandbox_mode`
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

The driver goes into ``/grader`` beside the files the caller gives. What
comes back is read through pipes with hard size caps.
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

from .bytecode import pycache_binds
from .records import Job
from .sandbox_mode import SandboxUnavailable as SandboxUnavailable  # raised here, defined there
from .sandbox_mode import resolve

DRIVER = Path(__file__).with_name("driver.py")
#: The program that runs in the sandbox (it imports nothing of the grader's).
DRIVER_FILES = {"driver.py": DRIVER}
SANDBOX_HOME = "/tmp"
GRADER_DIR = "/grader"
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
    """The sandbox mode that works here (``root`` or ``userns``, see :mod:`classgrader.sandbox_mode`).

    ``mode`` is ``auto`` or one of them. Raises :class:`SandboxUnavailable`
    with a clear message (the package to install, the sysctl to change)
    unless a sandbox can start.
    """
    return resolve(mode)


def bwrap_command(
    job_file: Path,
    grader_files: dict[str, Path],
    extra_files: dict[str, Path],
    limits: Limits,
    uid: int,
    mode: str = "root",
) -> list[str]:
    """The full command line: root mode prlimit -> bwrap -> setpriv -> python driver;
    ``userns`` mode bwrap -> prlimit -> python driver."""
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
    cmd += ["--ro-bind", str(job_file), f"{GRADER_DIR}/job.json"]
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
        f"{GRADER_DIR}/job.json",
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
    """Run the driver on ``job`` and return what it reported, within ``limits``.

    ``grader_files`` (path in ``/grader`` -> file) are the packages the job
    needs, e.g. ``grading``; the driver's own files are added. ``mode`` is the
    sandbox mode (``root``, ``userns``, or ``auto``: see :func:`check_available`).
    """
    extra_files = extra_files or {}
    grader_files = {**grader_files, **DRIVER_FILES}
    with tempfile.TemporaryDirectory(prefix="classgrader-job-") as tmp:
        tmpdir = Path(tmp)
        os.chmod(tmpdir, 0o755)
        job_file = tmpdir / "job.json"
        job = job.copy()
        job["wall"], job["cell_share"] = limits.wall_seconds, limits.cell_share
        job["cell_output_chars"] = limits.cell_output_chars
        if sandboxed:
            job["sys_path"] = [GRADER_DIR]
            job_file.write_text(json.dumps(job))
            os.chmod(job_file, 0o644)
            mode = resolve(mode)
            cmd = bwrap_command(job_file, grader_files, extra_files, limits, uid, mode)
            cwd = None
        else:
            # Trusted trial run: same driver, grading files copied next to the job.
            for rel, src in grader_files.items():
                dest = tmpdir / "grader" / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
            work = tmpdir / "work"
            work.mkdir()
            for name, src in extra_files.items():
                shutil.copy2(src, work / name)
            job["sys_path"] = [str(tmpdir / "grader")]
            job_file.write_text(json.dumps(job))
            cmd = [sys.executable, "-I", "-X", "utf8", str(tmpdir / "grader" / "driver.py"), str(job_file)]
            cwd = work
        outcome = _execute(cmd, limits, cwd=cwd, registry=registry, env=None if sandboxed else _plain_env(tmpdir))
        outcome.mode = mode if sandboxed else "none"
        return outcome


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


def _execute(cmd: list[str], limits: Limits, *, cwd, registry, env) -> RunOutcome:
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=cwd,
        env=env,
    )
    if registry is not None:
        registry.add(proc.pid)
    result_buf = bytearray()
    log_buf = bytearray()
    overflow = False
    timed_out = False
    assert proc.stdout is not None and proc.stderr is not None  # both are pipes
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "result")
    sel.register(proc.stderr, selectors.EVENT_READ, "log")
    deadline = started + limits.wall_seconds
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                _kill_group(proc.pid)
                break
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if key.data == "result":
                    if len(result_buf) + len(chunk) > limits.result_bytes:
                        overflow = True
                        _kill_group(proc.pid)
                        sel.unregister(key.fileobj)
                        continue
                    result_buf += chunk
                else:
                    room = limits.log_bytes - len(log_buf)
                    if room > 0:
                        log_buf += chunk[:room]
        # Streams closed (or time is up): the process must end now or be killed.
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0) + 0.5)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            proc.wait()
    finally:
        if proc.poll() is None:
            _kill_group(proc.pid)
            proc.wait()
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        if registry is not None:
            registry.discard(proc.pid)
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
    rc = proc.returncode
    return RunOutcome(
        events=events,
        returncode=rc if rc is not None and rc >= 0 else None,
        signal=-rc if rc is not None and rc < 0 else None,
        timed_out=timed_out,
        result_overflow=overflow,
        log=bytes(log_buf).decode("utf-8", "replace"),
        seconds=round(time.monotonic() - started, 3),
    )
