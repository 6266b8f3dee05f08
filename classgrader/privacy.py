"""Keep the instructor's course private on a shared machine.

The course folder holds the solutions, the gradebook, every learner's
submission and feedback, the reports, the LMS roster mapping and the course
secret. With Debian's defaults (umask 022, ``useradd --create-home`` making
0755 homes) every other account can read all of it. What ``./course grade``
checks: that no other account can reach the course folder or the output
folder (through every folder above it); when one can, it says so and names the command that fixes it
(``chmod 700 FOLDER``: the folder alone suffices, since nothing inside can be
reached without entering it). The gradebook (SQLite) and the secret are made
owner-only when they are created, in case the folder is opened later.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path


def open_folders(*folders: Path) -> list[Path]:
    """The given folders (resolved, each once) that other accounts can reach: the folder and every folder
    above it let others through (their x bit for others). A closed home above a course keeps it private."""
    out: list[Path] = []
    for folder in folders:
        path = Path(folder).resolve()
        if path in out or not path.is_dir():
            continue
        if all(os.stat(p).st_mode & stat.S_IXOTH for p in (path, *path.parents)):
            out.append(path)
    return out


def warning(*folders: Path) -> str | None:
    """A warning naming each folder others may enter and the command that closes it, or None."""
    opened = open_folders(*folders)
    if not opened:
        return None
    names = " ".join(shlex.quote(str(p)) for p in opened)
    return (
        f"classgrader: WARNING: other accounts on this machine can enter {names}, so they can read its "
        "solutions, gradebook, submissions, reports and LMS roster mapping. Make it yours alone: "
        f"chmod 700 {names}"
    )


def owner_only(path: Path) -> None:
    """``path`` readable and writable by its owner alone (0600), if it exists."""
    if path.is_file():
        os.chmod(path, 0o600)
