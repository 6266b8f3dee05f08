"""Run a command as an ordinary user, from tests that run as root (here and in CI).

:func:`command` drops to a spare uid with ``setpriv`` (no capabilities, no
groups, ``no_new_privs``), so the command has exactly the rights of a user
without root. When the Python interpreter lives under a folder that other
users cannot enter (``/root/.pyenv``, say), root first wraps the command in a
bubblewrap mount namespace where that folder is replaced by an empty tmpfs
holding only the interpreter, read-only: nothing else changes, and the
command still runs as the spare uid. The spare uid writes only to a folder
that :func:`home` makes for it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

UID = 65534  # nobody: owns nothing, writes nowhere it was not given


def _closed_ancestor(path: Path) -> Path | None:
    """The highest folder above ``path`` that other users may not enter, or None."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None


def home() -> Path:
    """A fresh folder under /tmp owned by the spare uid (its HOME and output), removed when the tests end."""
    path = Path(tempfile.mkdtemp(prefix="classgrader-user-"))
    atexit.register(shutil.rmtree, path, True)
    os.chown(path, UID, UID)
    os.chmod(path, 0o755)
    return path


def command(argv: list[str], user_home: Path) -> list[str]:
    """``argv`` run as the spare uid, with HOME=``user_home``; the environment is otherwise kept."""
    if os.geteuid() != 0:
        return argv  # already an ordinary user
    drop = [
        "setpriv",
        f"--reuid={UID}",
        f"--regid={UID}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        "env",
        f"HOME={user_home}",
        f"MPLCONFIGDIR={user_home / '.matplotlib'}",
    ]
    python = Path(sys.base_prefix).resolve()
    closed = _closed_ancestor(python)
    if closed is None:
        return [*drop, *argv]
    folders = []  # the folders between the tmpfs and the interpreter, which bwrap would make private
    for parent in reversed(python.parents):
        if parent.is_relative_to(closed) and parent != closed:
            folders += ["--perms", "0755", "--dir", str(parent)]
    return [
        "bwrap",
        "--dev-bind",
        "/",
        "/",
        "--perms",
        "0755",
        "--tmpfs",
        str(closed),
        *folders,
        "--ro-bind",
        str(python),
        str(python),
        "--",
        *drop,
        *argv,
    ]
