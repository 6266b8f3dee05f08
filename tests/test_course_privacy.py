"""A course folder on a shared machine: ``./course grade`` names an open one and the command that closes it.

As root, a course folder is made as Debian's defaults make one (umask 022: 0755 folders, 0644 files) with
a solution and a gradebook in it; an ordinary account (``ordinary_user``) can read both. The warning's own
command is then run, and the same account can read neither.
"""

from __future__ import annotations

import os
import pwd
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


def guide_useradd() -> list[str]:
    """The hub guide's command that makes a learner's account (its first ``useradd`` line), as words."""
    guide = Path(__file__).resolve().parents[1] / "solution_book" / "guide_hub.md"
    line = next(line.strip() for line in guide.read_text().splitlines() if line.strip().startswith("# useradd"))
    return shlex.split(line.removeprefix("#").split("&&")[0])


def _account(words: list[str], name: str, base: Path) -> tuple[int, int]:
    subprocess.run([*words[:-1], "--home-dir", str(base / name), name], check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def _as(ids: tuple[int, int], argv: list[str]) -> subprocess.CompletedProcess:
    uid, gid = ids
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv], capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to make accounts as the hub guide does")
def test_the_hub_guides_accounts_keep_each_learner_out_of_the_others_home():
    words = guide_useradd()
    assert words[0] == "useradd" and "--create-home" in words
    base = Path(tempfile.mkdtemp(prefix="hub-homes-"))
    os.chmod(base, 0o755)  # as /home is: anyone may pass through it
    names = {"ada": "sdpa-test-ada", "bo": "sdpa-test-bo", "cy": "sdpa-test-cy"}  # no real account's names
    try:
        ada = _account(words, names["ada"], base)
        bo = _account(words, names["bo"], base)
        # The control: an account made without the guide's options, as Debian's defaults make it.
        cy = _account(["useradd", "--create-home", names["cy"]], names["cy"], base)
        for who, ids in (("ada", ada), ("cy", cy)):
            path = base / names[who] / "hw2_stable_softmax.ipynb"
            assert _as(ids, ["sh", "-c", f"umask 022; echo my answer > {shlex.quote(str(path))}"]).returncode == 0
        assert _as(bo, ["cat", str(base / names["cy"] / "hw2_stable_softmax.ipynb")]).returncode == 0
        assert _as(bo, ["cat", str(base / names["ada"] / "hw2_stable_softmax.ipynb")]).returncode != 0
    finally:
        for name in names.values():
            subprocess.run(["userdel", "--remove", name], capture_output=True)
        subprocess.run(["rm", "-rf", str(base)], check=False)
