"""A whole term's round trip through nbgrader's exchange, with nbgrader's own commands.

The instructor releases hw2 from a course folder (a copy of the repository's
release), three learners fetch it, answer it and submit (one after the
deadline), a fourth on the roster never submits; the instructor collects,
grades with ``./course grade`` (``python -m classgrader``), and releases the
feedback; each learner fetches theirs. Each learner must receive the course's
feedback page with their own score (the late one after the penalty). Then
``nbgrader generate_feedback --force`` replaces the pages with nbgrader's own;
a new ``./course grade`` puts the course's back, and a second release and fetch
return them, not the stale ones.

As in nbgrader's own tests (``nbgrader/tests/apps``): nbgrader's command lines,
run one after another in one process (``tests/nbgrader_session.py``), each in
the folder it is run in (the course, a learner's home), one exchange folder
(mode 777) named on every command with ``--Exchange.root``, and, as root,
``--student=NAME`` on submit and fetch_feedback. nbgrader runs with this
virtual environment's ``bin`` first on ``PATH`` (its first gradebook creation
calls ``alembic``). The time of each step is printed (``pytest -s``).

A learner outside the hub, whose machine sees the exchange folder, runs the
learner kit's own lines (``kit.exchange_lines``, as the welcome page prints
them) from a folder of their own: the last test runs exactly those.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbgrader_session import NbgraderSession
from test_class_grading import needs_sandbox

from devtools.sample_submissions import Builder

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"
COURSE_ID = "sdpa-course"  # the course id of the repository's nbgrader_config.py
# learner -> (what they hand in, their final score out of 10, worked out from the rules below)
LEARNERS = {
    "alice": ("solution", 10),
    "bob": ("blank", 0),
    "carol": ("solution", 9),  # late by a second or two: 1 started hour at 1 point per hour
}
ABSENT = "dave"  # on the roster, never submits


def env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


class Term:
    """One course folder, one exchange, one home folder per learner; every command timed."""

    def __init__(self, root: Path):
        self.root = root
        self.course = root / "course"
        self.exchange = root / "exchange"
        self.homes = root / "home"
        self.times: dict[str, list[float]] = {}
        self.session = NbgraderSession(env())
        self.exchange.mkdir()
        os.chmod(self.exchange, 0o777)
        (self.course / "exercises").mkdir(parents=True)
        shutil.copytree(REPO / "exercises" / ASSIGNMENT, self.course / "exercises" / ASSIGNMENT)
        shutil.copy(REPO / "nbgrader_config.py", self.course / "nbgrader_config.py")

    def run(self, step: str, args: list[str], cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess:
        started = time.monotonic()
        where = {} if home is None else {"HOME": str(home)}
        done = subprocess.run(args, cwd=cwd, env=env() | where, capture_output=True, text=True, timeout=600)
        self.times.setdefault(step, []).append(time.monotonic() - started)
        assert done.returncode == 0, f"{step}: {' '.join(args)}\n{done.stdout}\n{done.stderr}"
        return done

    def nbgrader(self, step: str, *args: str, cwd: Path | None = None, learner: str | None = None) -> None:
        cmd = [*args, f"--Exchange.root={self.exchange}"]
        if learner is not None:
            home = self.home(learner)
            cmd += [f"--course={COURSE_ID}", f"--Exchange.cache={home / '.nbgrader-cache'}"]
        started = time.monotonic()
        code, output = self.session.run(cmd, cwd or self.course)
        self.times.setdefault(step, []).append(time.monotonic() - started)
        assert code == 0, f"{step}: nbgrader {' '.join(cmd)}\n{output}"

    def home(self, learner: str) -> Path:
        home = self.homes / learner
        home.mkdir(parents=True, exist_ok=True)
        return home

    def grade(self, step: str, *extra: str) -> subprocess.CompletedProcess:
        return self.run(
            step,
            [
                sys.executable,
                "-m",
                "classgrader",
                ASSIGNMENT,
                str(self.course / "submitted"),
                "--course",
                str(REPO),
                "--out",
                str(self.course),
                "--roster",
                str(self.root / "roster.txt"),
                "--timeout",
                "20",
                "--workers",
                "2",
                "--no-kernel-record",
                "--quiet",
                *extra,
            ],
            self.course,
        )

    def fetched_feedback(self, learner: str) -> list[Path]:
        return sorted((self.home(learner) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))


@pytest.fixture(scope="module")
def term(tmp_path_factory) -> Iterator[Term]:
    t = Term(tmp_path_factory.mktemp("term"))
    (t.root / "roster.txt").write_text("\n".join([*LEARNERS, ABSENT]) + "\n")
    builder = Builder(REPO, ASSIGNMENT)
    t.nbgrader("release_assignment", "release_assignment", ASSIGNMENT)

    def hand_in(learner: str) -> None:
        home = t.home(learner)
        t.nbgrader("fetch_assignment", "fetch_assignment", ASSIGNMENT, cwd=home, learner=learner)
        notebook = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert notebook.is_file(), "fetch_assignment gave the learner the release"
        if LEARNERS[learner][0] != "blank":
            notebook.write_bytes(builder.build(LEARNERS[learner][0])[1])
        t.nbgrader("submit", "submit", ASSIGNMENT, f"--student={learner}", cwd=home, learner=learner)

    for learner in ("alice", "bob"):
        hand_in(learner)
    time.sleep(1.1)  # nbgrader's timestamps have microseconds: the deadline falls between the two groups
    t.deadline = dt.datetime.now(dt.UTC).isoformat()  # type: ignore[attr-defined]
    time.sleep(1.1)
    hand_in("carol")
    t.nbgrader("collect", "collect", ASSIGNMENT)
    yield t
    t.session.close()


def grade_args(term: Term) -> list[str]:
    return ["--deadline", term.deadline, "--penalty", "1", "--period", "hour"]  # type: ignore[attr-defined]


@needs_sandbox
def test_the_exchange_round_trip_returns_the_courses_feedback(term):
    submitted = term.course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted(LEARNERS)
    for learner in LEARNERS:
        folder = submitted / learner / ASSIGNMENT
        assert (folder / "timestamp.txt").is_file() and (folder / "submission_secret.txt").is_file()

    term.grade("./course grade", *grade_args(term))
    for learner in LEARNERS:
        feedback = term.course / "feedback" / learner / ASSIGNMENT
        for name in ("timestamp.txt", "submission_secret.txt"):  # what release_feedback reads beside the page
            assert (feedback / name).read_text() == (submitted / learner / ASSIGNMENT / name).read_text()
        assert (term.course / "autograded" / learner / ASSIGNMENT / "timestamp.txt").is_file()
    assert not (term.course / "feedback" / ABSENT).exists(), "no page for a learner who sent nothing"

    term.nbgrader("release_feedback", "release_feedback", ASSIGNMENT)
    for learner, (_, score) in LEARNERS.items():
        term.nbgrader(
            "fetch_feedback",
            "fetch_feedback",
            ASSIGNMENT,
            f"--student={learner}",
            cwd=term.home(learner),
            learner=learner,
        )
        pages = term.fetched_feedback(learner)
        assert len(pages) == 1, f"{learner} fetched {pages}"
        page = pages[0].read_text()
        assert f"Student: <strong>{learner}</strong>" in page  # the course's page, for this learner
        assert f'<p class="score">Score: {score:g} / 10</p>' in page
    carol = term.fetched_feedback("carol")[0].read_text()
    assert "Raw score 10, late penalty &minus;1, final score 9." in carol
    assert "late penalty" not in term.fetched_feedback("alice")[0].read_text()

    # The LMS files beside the reports: every learner who sent something, by nbgrader id (no mapping: the
    # accounts' names); the absent one left out, so the import clears no grade.
    moodle = (term.course / "reports" / ASSIGNMENT / "moodle_import.csv").read_text().splitlines()
    assert moodle == ["Username," + ASSIGNMENT, "alice,10", "bob,0", "carol,9"]


@needs_sandbox
def test_after_nbgrader_wrote_its_feedback_a_new_grade_puts_the_courses_back(term):
    # Needs the first test's grading (same module, in order): nbgrader's generate_feedback replaces the pages.
    page = term.course / "feedback" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert 'class="score"' in page.read_text()
    term.nbgrader("generate_feedback", "generate_feedback", ASSIGNMENT, "--force")
    assert 'class="score"' not in page.read_text(), "nbgrader wrote its own page"

    term.grade("./course grade, again", *grade_args(term))
    assert '<p class="score">Score: 10 / 10</p>' in page.read_text()

    for learner in LEARNERS:
        shutil.rmtree(term.home(learner) / ASSIGNMENT / "feedback")
    term.nbgrader("release_feedback, again", "release_feedback", ASSIGNMENT)
    for learner, (_, score) in LEARNERS.items():
        term.nbgrader(
            "fetch_feedback, again",
            "fetch_feedback",
            ASSIGNMENT,
            f"--student={learner}",
            cwd=term.home(learner),
            learner=learner,
        )
        (fetched,) = term.fetched_feedback(learner)
        assert f'<p class="score">Score: {score:g} / 10</p>' in fetched.read_text()
    print("\nexchange round trip: step, calls, seconds per call, seconds in all")
    for step, seconds in term.times.items():
        print(f"  {step:24s} {len(seconds):2d} {sum(seconds) / len(seconds):6.2f} {sum(seconds):7.2f}")


@pytest.fixture
def released(tmp_path) -> Iterator[Term]:
    """A course that has released hw2 into an exchange of its own, and nothing else."""
    t = Term(tmp_path)
    t.nbgrader("release_assignment", "release_assignment", ASSIGNMENT)
    yield t
    t.session.close()


def test_the_kits_exchange_lines_fetch_and_submit_from_a_learners_own_folder(released):
    import getpass
    import importlib.metadata
    import json

    from packaging.requirements import Requirement

    from nbgrader_tools import kit

    install, *commands = kit.exchange_lines(ASSIGNMENT, str(released.exchange))
    # The extra installs the nbgrader these commands run with here.
    assert install.endswith(kit.EXCHANGE_REQUIREMENTS)
    (nbgrader,) = [Requirement(line) for line in kit.exchange_requirements()]
    assert nbgrader.name == "nbgrader" and nbgrader.specifier.contains(importlib.metadata.version("nbgrader"))

    home = released.home("learner")  # their own folder, as their HOME: no course folder, no config of the course's
    fetch, submit = commands
    released.run("learner: fetch", ["bash", "-c", fetch], cwd=home, home=home)
    notebook = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = json.loads(notebook.read_text())
    nb["cells"].append({"cell_type": "markdown", "id": "mine", "metadata": {}, "source": "my own words"})
    notebook.write_text(json.dumps(nb))
    released.run("learner: submit", ["bash", "-c", submit], cwd=home, home=home)

    inbound = released.exchange / COURSE_ID / "inbound"
    (sent,) = inbound.iterdir()
    who, assignment, _ = sent.name.split("+", 2)
    assert (who, assignment) == (getpass.getuser(), ASSIGNMENT)  # under the learner's login name
    assert "my own words" in (sent / f"{ASSIGNMENT}.ipynb").read_text()
