"""A course folder on a shared machine: ``./course grade`` names an open one and the command that closes it.

As root, a course folder is made as Debian's defaults make one (umask 022: 0755 folders, 0644 files) with
a solution and a gradebook in it; an ordinary account (``ordinary_user``) can read both. The warning's own
command is then run, and the same account can read neither.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

import pytest
from ordinary_user import command as as_ordinary_user
from ordinary_user import home

from classgrader import privacy
from classgrader.books import gradebook


def readable_by_another_account(path: Path) -> bool:
    done = subprocess.run(as_ordinary_user(["cat", str(path)], home()), capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to act as a second account")
def test_the_warnings_command_keeps_other_accounts_out_of_the_course():
    machine = Path(tempfile.mkdtemp(prefix="course-home-"))
    os.chmod(machine, 0o755)  # a home as useradd --create-home makes it
    course = machine / "course"
    (course / "solutions" / "hw").mkdir(parents=True)
    for folder in (course, course / "solutions", course / "solutions" / "hw"):
        os.chmod(folder, 0o755)
    solution = course / "solutions" / "hw" / "reasoning.md"
    solution.write_text("the answer\n")
    os.chmod(solution, 0o644)
    url = gradebook.sqlite_url(course / "gradebook.db")
    with gradebook.open_gradebook(url, "sdpa-course") as gb:
        gb.update_or_create_student("ada")
    os.chmod(course / "gradebook.db", 0o644)
    try:
        assert readable_by_another_account(solution) and readable_by_another_account(course / "gradebook.db")
        said = privacy.warning(course)
        assert said is not None
        fix = shlex.split(said.rpartition(": ")[2])
        assert fix == ["chmod", "700", str(course)]
        subprocess.run(fix, check=True)
        assert privacy.warning(course) is None
        assert not readable_by_another_account(solution)
        assert not readable_by_another_account(course / "gradebook.db")
    finally:
        subprocess.run(["rm", "-rf", str(machine)], check=False)
