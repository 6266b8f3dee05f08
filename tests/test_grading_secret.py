"""Secure by default: with no course secret configured, the first ``./course grade``
makes one in a private file outside the course folder, names it in
``nbgrader_config.py`` (where ``nbgrader autograde``'s hidden cells read it too)
and uses it; nothing falls back to a seed anyone could compute.

Every test runs with a temporary HOME and XDG_CONFIG_HOME, never the real ones,
and on a scratch copy of the course, never this repository's config.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.homework import submissions as corpus
from traitlets.config import Config

from classgrader import cli, settings
from classgrader.assignments import secret as course_secret_file
from classgrader.assignments.course import SetupError, load_assignment
from nbgrader_tools import scratch_course as nbt
from sdpa_course import grading
from sdpa_course.grading import seeds

ASSIGNMENT = "hw2_stable_softmax"
COURSE_ID = "sdpa-course"  # c.CourseDirectory.course_id in the repository's nbgrader_config.py


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A temporary HOME with no secret anywhere: no COURSE_GRADING_SECRET, no XDG_CONFIG_HOME."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv(seeds.ENV_SECRET, raising=False)
    monkeypatch.delenv(seeds.ENV_SEED, raising=False)
    return folder


@pytest.fixture
def course(tmp_path) -> Path:
    """A scratch course: the repository's config, the source and the release of one assignment."""
    root = nbt.make_course(tmp_path / "course", [ASSIGNMENT])
    shutil.copytree(nbt.REPO / "exercises" / ASSIGNMENT, root / "exercises" / ASSIGNMENT)
    return root


def _submit(course: Path) -> list[str]:
    """The solution and two corpus files, in nbgrader's ``submitted/<student>/<assignment>/`` layout."""
    nbt.submit(course, "solution", ASSIGNMENT, course / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    students = ["solution"]
    for _, path in corpus.fixtures(ASSIGNMENT)[:2]:
        _, cells = corpus.parse(path)
        nbt.submit(course, path.stem, ASSIGNMENT, corpus.submission(ASSIGNMENT, cells))
        students.append(path.stem)
    return students


def _grade(course: Path, out: Path) -> dict[str, dict]:
    code = cli.main(
        [ASSIGNMENT, str(course / "submitted"), "--course", str(course), "--out", str(out)]
        + ["--workers", "1", "--no-sandbox", "--quiet"]
    )
    assert code == 0
    return {p.stem: json.loads(p.read_text()) for p in (out / "reports" / ASSIGNMENT / "results").glob("*.json")}


def _rule(secret: bytes, student: str) -> int:
    """The documented seed rule, computed here with hashlib alone."""
    mac = hmac.new(secret, ASSIGNMENT.encode() + b"\0" + student.encode(), hashlib.sha256).digest()
    return int.from_bytes(mac[:4], "big") & 0x7FFFFFFF


def _hidden_seed_in_kernel(course: Path, student: str) -> subprocess.CompletedProcess:
    """What a hidden test cell computes under ``nbgrader autograde`` (a fresh process in ``autograded/``)."""
    folder = course / "autograded" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    code = f"from sdpa_course.grading import seeds; print(seeds.hidden_seed({ASSIGNMENT!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=folder, env=nbt.nbgrader_env(), capture_output=True, text=True
    )


def test_the_first_grade_makes_a_private_secret_records_it_and_both_graders_use_it(
    home, course, tmp_path, capsys, monkeypatch
):
    config_before = (course / "nbgrader_config.py").read_text()
    students = _submit(course)
    first = _grade(course, tmp_path / "out1")
    made = home / ".config" / "sdpa-course" / COURSE_ID / "grading-secret"
    assert made.is_file()
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(made.parent.parent.stat().st_mode) == 0o700
    assert not made.resolve().is_relative_to(course.resolve())
    secret = made.read_bytes().strip()
    assert len(secret) == 64 and COURSE_ID.encode() not in secret
    err = capsys.readouterr().err
    assert str(made) in err and "mode 600" in err and "nbgrader_config.py" in err
    line = f"c.CourseGrading.secret_file = '~/.config/sdpa-course/{COURSE_ID}/grading-secret'"
    assert line in err
    config_after = (course / "nbgrader_config.py").read_text()
    assert config_after.startswith(config_before)  # the rest of the file untouched
    assert line in config_after[len(config_before) :].splitlines()
    assert sorted(first) == sorted(students)
    for student in students:
        assert first[student]["seed"] == _rule(secret, student)

    # The second grade reuses the file: same secret, same config, same seeds and scores, and says nothing new;
    # it reads nbgrader_config.py once, for every step.
    reads = []
    monkeypatch.setattr(settings, "read_config", lambda c: reads.append(c) or seeds.read_config(c))
    monkeypatch.setattr(seeds, "secret_file_named", lambda c: pytest.fail("the grader read the secret's name again"))
    again = _grade(course, tmp_path / "out2")
    assert reads == [course]
    assert made.read_bytes().strip() == secret
    assert (course / "nbgrader_config.py").read_text() == config_after
    assert "course secret" not in capsys.readouterr().err
    for student in students:
        assert again[student]["seed"] == first[student]["seed"]
        assert {g: c["score"] for g, c in again[student]["cells"].items()} == {
            g: c["score"] for g, c in first[student]["cells"].items()
        }

    # A hidden test cell under nbgrader autograde reads the recorded file: the same seed.
    done = _hidden_seed_in_kernel(course, "ada")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) == _rule(secret, "ada")

    # nbgrader autograde itself, with nothing but the recorded config: the same scores, cell by cell.
    nbt.run_nbgrader_batch([["generate_assignment", ASSIGNMENT, "--force"], ["autograde", ASSIGNMENT]], cwd=course)
    by_nbgrader = nbt.scores(course, ASSIGNMENT)
    for student in students:
        ours = {g: c["score"] for g, c in first[student]["cells"].items()}
        assert {g: s for g, s in by_nbgrader[student].items() if g != "total"} == ours, student
    assert by_nbgrader["solution"]["total"] == sum(c.points for c in grading.checks_for(ASSIGNMENT))


@pytest.mark.usefixtures("home")
def test_an_existing_secret_file_is_never_overwritten(course, tmp_path, monkeypatch):
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    mine = xdg / "sdpa-course" / COURSE_ID / "grading-secret"
    mine.parent.mkdir(parents=True)
    mine.write_text("the instructor's own secret\n")
    mine.chmod(0o600)
    named, told = course_secret_file.ensure_secret(course, COURSE_ID, "")
    assert told is not None and "never overwritten" in told and str(mine) in told
    assert mine.read_text() == "the instructor's own secret\n"
    secret, where = seeds.course_secret(course)  # read through the config, which now names the file
    assert secret == b"the instructor's own secret" and where.endswith(str(mine)), where
    assert settings.read(course).grading.secret_file == named  # recorded in the config
    assert course_secret_file.ensure_secret(course, COURSE_ID, named) == (named, None)  # nothing more to do
    # The command-line maker refuses too.
    assert seeds.main(["new-secret", str(mine)]) == 1
    assert mine.read_text() == "the instructor's own secret\n"


def test_the_instructors_command_makes_a_private_secret_once_and_warns_of_nothing(tmp_path):
    path = tmp_path / "config" / "grading-secret"
    command = [sys.executable, "-m", "sdpa_course.grading", "new-secret", str(path)]
    made = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert made.returncode == 0 and made.stderr == "", made.stderr
    told = re.search(r"c\.CourseGrading\.secret_file = .*", made.stdout)  # the line to paste into the config
    assert told, made.stdout
    config = Config()
    exec(told[0], {"c": config})
    assert config.CourseGrading.secret_file == str(path)
    secret = path.read_text()
    assert len(bytes.fromhex(secret.strip())) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 1 and "not overwritten" in again.stderr
    assert path.read_text() == secret
    wrong = subprocess.run([sys.executable, "-m", "sdpa_course.grading", "new-secret"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "usage:" in wrong.stderr and "new-secret PATH" in wrong.stderr


def test_a_configured_but_missing_file_is_not_replaced_by_a_new_one(home, course, capsys):
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text() + 'c.CourseGrading.secret_file = "~/elsewhere/grading-secret"\n')
    _submit(course)
    code = cli.main([ASSIGNMENT, str(course / "submitted"), "--course", str(course), "--no-sandbox", "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and "python -m sdpa_course.grading new-secret" in err
    assert not (home / "elsewhere").exists() and not (home / ".config").exists()


def test_nothing_falls_back_to_the_course_id(home, course):
    with pytest.raises(seeds.SecretMissing, match=r"no course secret is configured.*\./course grade"):
        seeds.course_secret(course)
    with pytest.raises(SetupError, match="no course secret is configured"):
        load_assignment(course, ASSIGNMENT)
    # A hidden test cell under nbgrader autograde fails, saying how to make a secret.
    done = _hidden_seed_in_kernel(course, "ada")
    assert done.returncode != 0
    assert "SecretMissing" in done.stderr and "python -m sdpa_course.grading new-secret" in done.stderr
    assert not (home / ".config").exists()  # only ./course grade makes a secret


@pytest.mark.usefixtures("home")
def test_a_learner_without_any_secret_still_practises(course, monkeypatch):
    # The learner's own runs (check-before-submit, the hidden kinds on fresh inputs) need no secret.
    from sdpa_course.grading import hw2

    monkeypatch.chdir(course / "exercises" / ASSIGNMENT)
    assert len({seeds.hidden_seed(ASSIGNMENT) for _ in range(5)}) > 1
    scores = hw2.check_before_submit(corpus.solution_namespace(ASSIGNMENT))
    assert scores and all(s > 0 for s in scores.values())
