"""Which bubblewrap sandbox this machine allows: built as root, or in a user namespace.

Both modes give the learner's process the same world (see
:mod:`classgrader.sandbox.command`): new mount, PID, network, IPC and UTS namespaces,
read-only binds of ``/usr`` and the Python installation, a small tmpfs, no
capabilities, ``no_new_privs``, the same resource and wall-time limits. They
differ in how the process gets there and which uid it has on the host:

``root``
    The grader runs as root. bwrap builds the namespaces with root's rights
    (no user namespace), then ``setpriv`` switches to a spare uid of the host
    (one per worker slot) that owns nothing, and drops every capability. The
    learner's process is not the grader's uid, so per-user kernel limits
    (processes, pipe buffers) are not shared with the grader.

``userns``
    bubblewrap's unprivileged mode, as Flatpak uses it: any user can run it
    where the kernel allows unprivileged user namespaces. bwrap creates a user
    namespace in which the learner's process has a uid of its own (the same
    number as in root mode) mapped to the grader's uid outside, with no
    capabilities, and ``--disable-userns`` forbids it to create further user
    namespaces. The process-count limit is set inside the namespace, so it
    counts the sandbox's own processes only.

:func:`resolve` picks the mode: ``root`` when the grader runs as root and it
works, else ``userns``; it refuses with a message naming the missing package
or the kernel setting (sysctl) to change when neither works.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from classgrader.sandbox.command import SYSTEM_FS, namespace_args, setpriv_args

MODES = ("root", "userns")
#: What the summary says about each mode (and about running without a sandbox).
DESCRIPTIONS = {
    "root": "bubblewrap, built as root; learner code runs as a spare uid with no capabilities",
    "userns": "bubblewrap in an unprivileged user namespace; learner code has no capabilities",
    "none": "NO SANDBOX (--no-sandbox): learner code ran with the grader's rights",
}
PROBE_UID = 61999

# The kernel settings that can forbid unprivileged user namespaces: file under
# /proc/sys, the value that forbids, and how to allow them.
_SYSCTLS: tuple[tuple[str, Callable[[str], bool], str], ...] = (
    (
        "kernel/unprivileged_userns_clone",
        lambda v: v == "0",
        "kernel.unprivileged_userns_clone is 0 (Debian's switch for unprivileged user namespaces): "
        "an administrator can allow them with `sysctl -w kernel.unprivileged_userns_clone=1`",
    ),
    (
        "user/max_user_namespaces",
        lambda v: v == "0",
        "user.max_user_namespaces is 0 (no user namespaces may be created): "
        "an administrator can allow them with `sysctl -w user.max_user_namespaces=15000`",
    ),
    (
        "kernel/apparmor_restrict_unprivileged_userns",
        lambda v: v == "1",
        "kernel.apparmor_restrict_unprivileged_userns is 1 (Ubuntu 23.10 and later restrict user namespaces to "
        "programs with an AppArmor profile): an administrator can give bwrap one (Ubuntu's apparmor package ships "
        "/etc/apparmor.d/bwrap-userns-restrict) or set `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`",
    ),
)
PACKAGES = {"bwrap": "bubblewrap", "setpriv": "util-linux", "prlimit": "util-linux"}


class SandboxUnavailable(RuntimeError):
    """Neither sandbox mode can start here; the message says why and what to change."""


def missing_tools(mode: str) -> list[str]:
    """The programs ``mode`` needs that are not on PATH."""
    needed = ("bwrap", "setpriv", "prlimit") if mode == "root" else ("bwrap", "prlimit")
    return [tool for tool in needed if shutil.which(tool) is None]


def missing_packages_message(tools: list[str]) -> str:
    packages = sorted({PACKAGES[t] for t in tools})
    return (
        "the sandbox needs "
        + ", ".join(tools)
        + " (package "
        + " and ".join(packages)
        + "; Debian and Ubuntu: apt-get install "
        + " ".join(packages)
        + ")"
    )


def userns_blockers(proc_sys: Path = Path("/proc/sys")) -> list[str]:
    """Sentences naming each kernel setting under ``proc_sys`` that forbids unprivileged user namespaces."""
    found = []
    for name, forbids, sentence in _SYSCTLS:
        try:
            value = (proc_sys / name).read_text().strip()
        except OSError:
            continue  # this kernel has no such setting
        if forbids(value):
            found.append(sentence)
    return found


def probe_command(mode: str) -> list[str]:
    """A minimal sandbox of ``mode`` that prints the uid its program runs as."""
    base = ["bwrap", *namespace_args(mode, PROBE_UID), *SYSTEM_FS]
    if mode == "root":
        return [*base, *setpriv_args(PROBE_UID), "/usr/bin/id", "-u"]
    return [*base, "/usr/bin/id", "-u"]


def probe(mode: str) -> str | None:
    """None when a sandbox of ``mode`` starts here and runs as the probe's uid; else what went wrong."""
    if mode not in MODES:
        raise ValueError(f"unknown sandbox mode {mode!r}; choose one of {', '.join(MODES)} (or auto)")
    tools = missing_tools(mode)
    if tools:
        return missing_packages_message(tools)
    if mode == "root" and os.geteuid() != 0:
        return f"the root mode needs root (this grader runs as uid {os.geteuid()})"
    try:
        done = subprocess.run(probe_command(mode), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if done.returncode != 0:
        return "bwrap failed: " + (done.stderr.strip() or f"exit status {done.returncode}")
    if done.stdout.strip() != str(PROBE_UID):
        return f"the sandbox did not run as the unprivileged uid {PROBE_UID} (id -u said {done.stdout.strip()!r})"
    return None


@functools.cache
def resolve(wanted: str = "auto") -> str:
    """The sandbox mode to use: ``wanted``, or for ``auto`` root mode as root and the user-namespace mode otherwise.

    Raises :class:`SandboxUnavailable` with what to install or which sysctl to
    change when no sandbox can start. The answer is cached for the process.
    """
    if wanted != "auto":
        problem = probe(wanted)
        if problem is None:
            return wanted
        raise SandboxUnavailable(_refusal({wanted: problem}))
    problems = {}
    order = ("root", "userns") if os.geteuid() == 0 else ("userns",)
    for mode in order:
        problem = probe(mode)
        if problem is None:
            return mode
        problems[mode] = problem
    raise SandboxUnavailable(_refusal(problems))


def check_available(mode: str = "auto") -> str:
    """The sandbox mode that works here (``root`` or ``userns``).

    ``mode`` is ``auto`` or one of them. Raises :class:`SandboxUnavailable`
    with a clear message (the package to install, the sysctl to change)
    unless a sandbox can start.
    """
    return resolve(mode)


def _refusal(problems: dict[str, str]) -> str:
    lines = ["no sandbox can start here, so no submission was graded."]
    for mode, problem in problems.items():
        lines.append(f"  {mode} mode: {problem}")
    if "userns" in problems and not missing_tools("userns"):
        blockers = userns_blockers()
        if blockers:
            lines += ["  The kernel forbids unprivileged user namespaces:"] + [f"  - {b}" for b in blockers]
        else:
            lines.append(
                "  No kernel setting forbids user namespaces; a container's seccomp profile can "
                "(Docker: run the grading container with a profile that allows unshare, or as root "
                "with --cap-add SYS_ADMIN)"
            )
    if os.geteuid() != 0 and "root" not in problems:
        lines.append("  As root, the grader can also build each sandbox with root's rights (root mode).")
    lines.append("  --no-sandbox grades without any isolation: for trusted notebooks only.")
    return "\n".join(lines)
