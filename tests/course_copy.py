"""A copy of the course's files in a temporary folder, for tests that change them.

Tests that edit the course (a check's points, the table of contents) work on
such a copy, never on the repository. The copy holds the files git knows of
(tracked, and new ones not ignored), about 3 MB; the book's web assets
(``_ext/node_modules``, installed by ``./course build``) are linked, not copied.
Commands run in the copy import the copy's packages first (its folder is the
working directory and first on ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def copy_course(target: Path) -> Path:
    """Copy the course into ``target`` (created); return it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.is_file():
            continue  # deleted in the work tree
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)
    modules = REPO / "_ext" / "node_modules"
    if modules.is_dir():
        (target / "_ext" / "node_modules").symlink_to(modules, target_is_directory=True)
    return target


def env_for(copy: Path) -> dict[str, str]:
    """The environment for a command run in ``copy``: its packages first, the course's
    interpreter first on PATH (nbgrader calls ``alembic`` from there)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(copy)
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def run_in(copy: Path, args: list[str], timeout: float = 1800) -> subprocess.CompletedProcess:
    """``python ARGS`` in ``copy`` (not checked: the caller reads the return code)."""
    return subprocess.run(
        [sys.executable, *args], cwd=copy, env=env_for(copy), capture_output=True, text=True, timeout=timeout
    )
