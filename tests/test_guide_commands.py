"""Every command of the instructors' guide runs, or says where it is run, or says it is not run here.

The guide's pages (``nbgrader_tools.solution_book.GUIDE``) show commands in
MyST ``{code-block}`` directives, each with one class:

- ``guide-run``: run here, block after block in the order of the page, in
  one copy of the course (``tests/course_copy.py``) with a small class:
  alice and bob submit on time (alice the solution, bob the blank release),
  carol submits later, dave is on the roster and never submits. The learners
  fetch and submit with nbgrader's own commands before the *collect* block,
  in one nbgrader process as ``tests/test_exchange_round_trip.py`` does
  (``tests/nbgrader_session.py``);
- ``tested-by-<test file>``: run by that test, which must exist and name the
  command;
- ``not-run-here``: needs machines the tests do not have (a clone of your
  private repository, Slurm, Kubernetes).

The copy's ``HOME`` is a temporary folder, so the course secret that the
first ``./course grade`` makes is written there, never in the real home.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from course_copy import REPO, copy_course, env_for
from nbgrader_session import NbgraderSession
from test_class_grading import needs_sandbox

from devtools.sample_submissions import Builder
from nbgrader_tools.solution_book import GUIDE

PAGES = [REPO / "solution_book" / f"{name}.md" for name in GUIDE]
ASSIGNMENT = "hw2_stable_softmax"
ON_TIME = {"alice": "solution", "bob": "blank"}
LATE = {"carol": "solution"}
ABSENT = "dave"
# Blocks may be indented (inside a numbered step).
DIRECTIVE = re.compile(r"^[ \t]*```\{code-block\} (\S+)\n((?:[ \t]*:[\w-]+:[^\n]*\n)*)\n?(.*?)^[ \t]*```", re.M | re.S)
PLAIN_FENCE = re.compile(r"^[ \t]*```(bash|sh|shell|console)\s*$", re.M)
CLASSES = ("guide-run", "not-run-here")


def blocks(page: Path) -> list[tuple[str, str, str]]:
    """(language, class, code) of every ``{code-block}`` of a page, in order."""
    found = []
    for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
        options = dict(re.findall(r"^\s*:([\w-]+):\s*(.*)$", match.group(2), re.M))
        found.append((match.group(1), options.get("class", ""), match.group(3)))
    return found


def command_lines(code: str) -> list[str]:
    """The commands of a block, a line continued by a backslash joined to the next."""
    joined = code.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_every_command_block_is_run_here_run_elsewhere_or_marked_not_run():
    run_here = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not PLAIN_FENCE.search(text), f"{page.name}: a shell block without a class (use {{code-block}})"
        for language, cls, code in blocks(page):
            where = f"{page.name}: {code.strip().splitlines()[0]!r}"
            if cls == "guide-run":
                run_here += 1
                assert language == "bash", where
            elif cls.startswith("tested-by-"):
                test_file = REPO / "tests" / f"{cls.removeprefix('tested-by-')}.py"
                assert test_file.is_file(), f"{where}: {test_file.name} does not exist"
                test_text = test_file.read_text(encoding="utf-8")
                for line in command_lines(code):
                    words = line.split()
                    subcommand = words[1] if words[0] in ("./course", "nbgrader") and len(words) > 1 else words[0]
                    assert subcommand in test_text, f"{where}: {test_file.name} never names {subcommand!r}"
            else:
                assert cls == "not-run-here", f"{where}: class {cls!r} is none of {CLASSES} or tested-by-..."
                assert "not run here" in text.lower(), f"{page.name} must say which recipes are not run here"
    assert run_here >= 8


def run_blocks() -> list[str]:
    return [code for page in PAGES for _, cls, code in blocks(page) if cls == "guide-run"]


class Class:
    """The course copy, its exchange and the learners' homes."""

    def __init__(self, root: Path):
        self.course = copy_course(root / "course")
        (self.course / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)
        self.exchange = root / "exchange"
        self.homes = root / "home"
        # no secret from the environment (test_class_grading sets one): the first grade makes one
        base = {k: v for k, v in env_for(self.course).items() if k != "COURSE_GRADING_SECRET"}
        self.env = {
            **base,
            "HOME": str(root / "instructor-home"),
            "XDG_CONFIG_HOME": str(root / "instructor-home" / ".config"),
            "EXCHANGE": str(self.exchange),
        }
        self.session: NbgraderSession | None = None  # the learners' nbgrader, started when first needed
        (self.course / "roster.txt").write_text("\n".join([*ON_TIME, *LATE, ABSENT]) + "\n")
        (self.course / "lms_roster.csv").write_text(
            "student_id,canvas_id,name,email\n"
            + "".join(f"{s},{1000 + i},{s.title()},{s}@example.org\n" for i, s in enumerate([*ON_TIME, *LATE, ABSENT]))
        )

    def shell(self, code: str) -> subprocess.CompletedProcess:
        script = "set -euo pipefail\n" + (f"source {self.course / '.guide-env'}\n" if self.env_file.exists() else "")
        script += code + f"\nexport -p > {self.env_file}\n"
        return subprocess.run(
            ["bash", "-c", script], cwd=self.course, env=self.env, capture_output=True, text=True, timeout=1800
        )

    @property
    def env_file(self) -> Path:
        return self.course / ".guide-env"

    def nbgrader(self, learner: str, *args: str) -> None:
        home = self.homes / learner
        home.mkdir(parents=True, exist_ok=True)
        if self.session is None:
            self.session = NbgraderSession(self.env)
        args += (
            "--course=sdpa-course",
            f"--Exchange.root={self.exchange}",
            f"--Exchange.cache={home / '.nbgrader-cache'}",
        )
        code, output = self.session.run(list(args), cwd=home, env={"HOME": str(home)})
        assert code == 0, output

    def hand_in(self, learners: dict[str, str]) -> None:
        builder = Builder(self.course, ASSIGNMENT)
        for learner, kind in learners.items():
            self.nbgrader(learner, "fetch_assignment", ASSIGNMENT)
            notebook = self.homes / learner / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            if kind != "blank":
                notebook.write_bytes(builder.build(kind)[1])
            self.nbgrader(learner, "submit", ASSIGNMENT, f"--student={learner}")

    def scores(self) -> dict[str, dict[str, str]]:
        text = (self.course / "reports" / ASSIGNMENT / "student_scores.csv").read_text()
        return {row["student_id"]: row for row in csv.DictReader(io.StringIO(text))}


@pytest.fixture
def course_class(tmp_path) -> Iterator[Class]:
    made = Class(tmp_path)
    yield made
    if made.session is not None:
        made.session.close()


@needs_sandbox
def test_the_terms_commands_run_in_order_with_a_small_class(tmp_path, course_class):
    course = course_class.course
    checked: list[str] = []
    collected_bob = course / "submitted" / "bob" / ASSIGNMENT / "timestamp.txt"
    for code in run_blocks():
        if "collect --update" in code:
            first_collected = collected_bob.read_text()
            course_class.nbgrader("bob", "submit", ASSIGNMENT, "--student=bob")
        elif "nbgrader collect" in code:
            course_class.hand_in(ON_TIME)
            time.sleep(1.1)  # carol's nbgrader timestamp is later than the others'
            course_class.hand_in(LATE)
        started = time.monotonic()
        done = course_class.shell(code)
        took = time.monotonic() - started
        print(f"\n{took:6.1f} s  {command_lines(code)[0]}")
        assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        reports = course / "reports" / ASSIGNMENT
        if "--help" in code:
            assert (course_class.exchange).is_dir()
            assert f"c.Exchange.root = '{course_class.exchange}'" in (course / "nbgrader_config.py").read_text()
            checked.append("set up")
        elif "./course release" in code:
            assert (course / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
            assert (course_class.exchange / "sdpa-course" / "outbound" / ASSIGNMENT).is_dir()
            checked.append("release")
        elif "collect --update" in code:
            assert collected_bob.read_text() > first_collected, "the resubmission replaced the collected copy"
            checked.append("resubmission")
        elif "nbgrader collect" in code:
            assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted([*ON_TIME, *LATE])
            checked.append("collect")
        elif "release_feedback" in code:
            released = list((course_class.exchange / "sdpa-course" / "feedback").rglob("*.html"))
            assert len(released) == 3, released
            checked.append("feedback")
        elif "--lms-roster" in code:
            canvas = list(csv.reader(io.StringIO((reports / "canvas_import.csv").read_text())))
            assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
            assert canvas[1][0] == "Points Possible" and canvas[1][-1] == "10"
            by_id = {row[1]: row for row in canvas[2:]}
            assert by_id["1000"][-1] == "10" and by_id["1001"][-1] == "0" and "1003" not in by_id  # 1003: nothing sent
            checked.append("lms")
        elif "--deadline" in code:
            # months after 2026-03-01 23:59 Berlin: capped at 50% of 10
            rows = course_class.scores()
            assert rows["alice"]["late_penalty"] == "5" and rows["alice"]["score"] == "5", rows["alice"]
            assert rows["carol"]["score"] == "5" and rows["bob"]["score"] == "0"
            checked.append("late")
        elif "--preview" in code:
            rows = course_class.scores()  # shown, not applied: the late run's scores stand
            assert rows["alice"]["score"] == "5" and rows["carol"]["score"] == "5", rows["alice"]
            checked.append("preview")
        elif "--regrade" in code:
            rows = course_class.scores()  # the options above held for one run: no penalty configured
            assert rows["alice"]["score"] == "10" and rows["alice"]["late_penalty"] == "0", rows["alice"]
            assert rows["carol"]["score"] == "10" and rows["bob"]["score"] == "0"
            checked.append("regrade")
        elif "./course grade" in code and "--analyse-only" not in code:
            summary = (reports / "summary.txt").read_text()
            assert ABSENT in summary and "missing" in summary
            assert course_class.scores()["alice"]["score"] == "10"
            secret = tmp_path / "instructor-home" / ".config" / "sdpa-course"
            assert any(p.is_file() for p in secret.rglob("grading-secret")), "the secret went to the test's HOME"
            checked.append("grade")
        elif "--analyse-only" in code:
            assert (reports / "item_analysis.html").is_file()
            export = (course / "nbgrader_export.csv").read_text()
            assert "alice" in export and "carol" in export
            checked.append("after the deadline")
    assert checked == [
        "set up",
        "release",
        "collect",
        "resubmission",
        "grade",
        "feedback",
        "lms",
        "late",
        "preview",
        "regrade",
        "after the deadline",
    ]
    assert not os.path.exists(REPO / "submitted" / "carol"), "nothing was written into the repository"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_guide_never_names_this_machines_paths(page):
    text = page.read_text(encoding="utf-8")
    assert "/work/" not in text and "/tmp/" not in text
