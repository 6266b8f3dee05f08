"""The bubblewrap command line that starts one submission's sandbox, and what it is made of.

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
  time is up (:class:`classgrader.sandbox.session.Session`); ``--die-with-parent``
  and the PID namespace take every process started inside with it.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

from classgrader.sandbox.bytecode import pycache_binds
from classgrader.sandbox.limits import Limits

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


def setpriv_args(uid: int) -> list[str]:
    """Root mode's switch to ``uid`` with no groups, no capabilities and ``no_new_privs``, before the program."""
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]


def prlimit_args(limits: Limits) -> list[str]:
    """The resource limits, as a ``prlimit`` prefix to the program it limits."""
    cpu = int(limits.wall_seconds) + 5
    return [
        "prlimit",
        f"--as={limits.memory_bytes}",
        f"--cpu={cpu}",
        f"--nproc={limits.max_processes}",
        f"--fsize={limits.max_file_bytes}",
        "--nofile=256",
        "--core=0",
        "--",
    ]


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
    python = _python_paths()
    venv = python[1]
    rlimits = prlimit_args(limits)
    return [
        *(rlimits if mode == "root" else []),
        "bwrap",
        *namespace_args(mode, uid),
        "--die-with-parent",
        "--new-session",
        *SYSTEM_FS,
        *_filesystem(run_dir, grader_files, extra_files, limits, python),
        *_environment(venv),
        *(setpriv_args(uid) if mode == "root" else rlimits),
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


def _filesystem(
    run_dir: Path,
    grader_files: dict[str, Path],
    extra_files: dict[str, Path],
    limits: Limits,
    python: tuple[Path, Path, Path],
) -> list[str]:
    """The binds after the system: scratch tmpfs, Python, the grader's files, the learner's files, the jobs."""
    base, venv, site = python
    # The scratch tmpfs comes first: mounted later, it would hide a Python or a
    # virtual environment that lives under /tmp (a clone in /tmp, say).
    args = ["--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", SANDBOX_HOME]
    made = {SANDBOX_HOME}
    for root in (base, venv):
        for parent in _parents(root):
            if parent not in made:
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    args += ["--ro-bind", str(base), str(base)]
    if venv != base:
        args += ["--ro-bind", str(venv), str(venv)]
    for pth in _project_pth_files(site):
        args += ["--ro-bind", "/dev/null", str(pth)]
    args += ["--perms", "0755", "--dir", GRADER_DIR]
    # The grader's modules with their bytecode beside them (compiled once by the grader: see bytecode.py).
    binds = {f"{GRADER_DIR}/{rel}": src for rel, src in grader_files.items()}
    binds.update(pycache_binds({rel: src for rel, src in grader_files.items() if rel != "driver.py"}, GRADER_DIR))
    for dest, src in sorted(binds.items()):
        for parent in _parents(Path(dest)):
            if parent not in made and parent.startswith(GRADER_DIR + "/"):
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        args += ["--ro-bind", str(src), dest]
    for name, src in sorted(extra_files.items()):
        args += ["--ro-bind", str(src), f"{SANDBOX_HOME}/{name}"]
    return [*args, "--ro-bind", str(run_dir), RUN_DIR]


def _environment(venv: Path) -> list[str]:
    """A clean environment (one thread per numeric library, fixed hash seed) and the scratch folder as cwd."""
    env = {
        "HOME": SANDBOX_HOME,
        "PATH": f"{venv}/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{SANDBOX_HOME}/.matplotlib",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    args = ["--clearenv"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return [*args, "--chdir", SANDBOX_HOME]


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
