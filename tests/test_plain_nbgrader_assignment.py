"""An assignment written the plain nbgrader way, graded by ``./course grade`` as ``nbgrader autograde`` grades it.

The template ``solutions/hw_template_plain`` (two notebooks, a data file,
autograded test cells with asserts and hidden tests, a partial-credit test
cell, a manually graded answer) is released in a scratch course; several
learners' submissions are made from its release; then both ``./course grade``
and nbgrader's own ``nbgrader autograde`` grade the same files. Every graded
cell must get the same score from both, and the score that the submission's
design calls for (:data:`EXPECTED`, worked out by hand from the template).
nbgrader runs with ``OverwriteCells.add_missing_cells`` on, so that it puts a
deleted test cell back as the class grader does (by default it leaves that
cell for the formgrader instead).
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from course_copy import copy_course, env_for
from test_class_grading import needs_sandbox

from classgrader.assignments import course as assignment
from classgrader.assignments import plain_nbgrader
from classgrader.books import gradebook
from classgrader.pipeline import intake
from classgrader.stages import plain_grade
from nbgrader_tools.cells import nbgrader_meta
from nbgrader_tools.scratch_course import REPO, nbgrader_env, run_nbgrader

NAME = "hw_template_plain"
PART1, PART2 = "part1_read_data.ipynb", "part2_summary.ipynb"
SECRET = "plain-assignment-test-secret"

READ = """def read_celsius(path):
    with open(path, newline="") as fh:
        return [float(row["celsius"]) for row in csv.DictReader(fh)]"""
READ_NOTHING = "def read_celsius(path):\n    return []"
READ_RAISES = "def read_celsius(path):\n    return open(path).read().split()[99]"
FAHRENHEIT = "def fahrenheit(celsius):\n    return celsius * 9 / 5 + 32"
FAHRENHEIT_HALF = "def fahrenheit(celsius):\n    return celsius * 2 + 32"  # right at 0, wrong at 100
FAHRENHEIT_STDERR = (
    "import sys\n\ndef fahrenheit(celsius):\n    print('converting', file=sys.stderr)\n    return celsius * 9 / 5 + 32"
)
MEAN = "def mean(values):\n    return sum(values) / len(values)"
MEAN_WRONG = "def mean(values):\n    return sum(values) / (len(values) + 1)"
WARMEST = "Saturday, at 18.0 degrees: the largest value of the celsius column."

RIGHT1 = {"read_celsius": READ, "fahrenheit": FAHRENHEIT}
RIGHT2 = {"mean": MEAN}

#: student -> (answers in part 1, answers in part 2, test cells deleted, test cells edited)
SUBMISSIONS: dict[str, tuple[dict, dict, tuple, dict]] = {
    "all_right": (RIGHT1, RIGHT2 | {"warmest_day": WARMEST}, (), {}),
    "wrong_answer": (RIGHT1, {"mean": MEAN_WRONG}, (), {}),
    "raises_in_test": (RIGHT1 | {"read_celsius": READ_RAISES}, RIGHT2, (), {}),
    "partial_credit": (RIGHT1 | {"fahrenheit": FAHRENHEIT_HALF}, RIGHT2, (), {}),
    "deleted_test": (RIGHT1, RIGHT2, ("test_mean",), {}),
    # The edited test would pass anything; the instructor's version sees that read_celsius returns nothing.
    "edited_test": (RIGHT1 | {"read_celsius": READ_NOTHING}, RIGHT2, (), {"test_read_celsius": "pass"}),
    "writes_stderr": (RIGHT1 | {"fahrenheit": FAHRENHEIT_STDERR}, RIGHT2, (), {}),
    "blank": ({}, {}, (), {}),
}

#: What each graded cell should score, from the template's tests and the answers above (None: by hand).
EXPECTED = {
    "all_right": {"test_read_celsius": 1.0, "test_fahrenheit": 2.0, "test_mean": 1.0, "warmest_day": None},
    "wrong_answer": {"test_read_celsius": 1.0, "test_fahrenheit": 2.0, "test_mean": 0.0, "warmest_day": 0.0},
    "raises_in_test": {"test_read_celsius": 0.0, "test_fahrenheit": 2.0, "test_mean": 1.0, "warmest_day": 0.0},
    "partial_credit": {"test_read_celsius": 1.0, "test_fahrenheit": 1.0, "test_mean": 1.0, "warmest_day": 0.0},
    "deleted_test": {"test_read_celsius": 1.0, "test_fahrenheit": 2.0, "test_mean": 1.0, "warmest_day": 0.0},
    "edited_test": {"test_read_celsius": 0.0, "test_fahrenheit": 2.0, "test_mean": 1.0, "warmest_day": 0.0},
    "writes_stderr": {"test_read_celsius": 1.0, "test_fahrenheit": 0.0, "test_mean": 1.0, "warmest_day": 0.0},
    "blank": {"test_read_celsius": 0.0, "test_fahrenheit": 0.0, "test_mean": 0.0, "warmest_day": 0.0},
}
STATUSES = {name: "graded" for name in SUBMISSIONS} | {
    "deleted_test": "test_cells_changed",
    "edited_test": "test_cells_changed",
    "absent": "missing",
}
HIDDEN = ["assert len(values) == 7", "assert values[-1] == 15.5", "97.0 / 7"]


def learner_notebook(release: Path, answers: dict, drop: tuple = (), edit: dict | None = None):
    """The release with ``answers`` (grade_id -> source) typed in, ``drop``'s cells deleted, ``edit``'s rewritten."""
    nb = nbformat.read(release, as_version=4)
    kept = []
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in drop:
            continue
        cell.source = (edit or {}).get(gid, answers.get(gid, cell.source))
        kept.append(cell)
    nb.cells = kept
    return nb


def make_submissions(course: Path, students: dict[str, tuple[dict, dict, tuple, dict]]) -> Path:
    """Each student's two notebooks and the data file, in nbgrader's submitted/ layout."""
    release = course / "exercises" / NAME
    for student, (answers1, answers2, drop, edit) in students.items():
        folder = course / "submitted" / student / NAME
        folder.mkdir(parents=True)
        for name, answers in ((PART1, answers1), (PART2, answers2)):
            nbformat.write(learner_notebook(release / name, answers, drop, edit), folder / name)
        shutil.copy(release / "temperatures.csv", folder)
        (folder / "timestamp.txt").write_text("2026-03-01 10:00:00.000000 UTC")
    return course / "submitted"


def released_course(root: Path) -> Path:
    """A scratch course with the template released by nbgrader (its gradebook knows the assignment)."""
    course = root / "course"
    (course / "solutions").mkdir(parents=True)
    shutil.copy(REPO / "nbgrader_config.py", course)
    shutil.copytree(REPO / "solutions" / NAME, course / "solutions" / NAME)
    run_nbgrader(["generate_assignment", NAME, "--force"], cwd=course)
    return course


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """The template released once; each test grades in a copy of its own (:func:`copy_of`)."""
    return released_course(tmp_path_factory.mktemp("release"))


def copy_of(release: Path, root: Path) -> Path:
    """A copy of the released course (its gradebook knows the assignment) in ``root``."""
    return Path(shutil.copytree(release, root / "course"))


def course_grade(course: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """``./course grade`` on the course's submitted/ folder, as an instructor runs it."""
    env = nbgrader_env() | {"COURSE_GRADING_SECRET": SECRET}
    cmd = [str(REPO / "course"), "grade", NAME, str(course / "submitted"), "--course", str(course)]
    cmd += ["--out", str(out), "--workers", "2", "--quiet", *extra]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def nbgrader_scores(course: Path) -> dict[str, dict[str, float | None]]:
    """``{student: {grade_id: auto score}}`` from the gradebook that ``nbgrader autograde`` wrote."""
    with gradebook.open_gradebook(gradebook.sqlite_url(course / "gradebook.db"), "sdpa-course") as gb:
        return gradebook.cell_scores(gb, NAME, auto=True)


@pytest.fixture(scope="module")
def graded(release, tmp_path_factory):
    root = tmp_path_factory.mktemp("plain")
    course = copy_of(release, root)
    make_submissions(course, SUBMISSIONS)
    roster = root / "roster.txt"
    roster.write_text("\n".join([*SUBMISSIONS, "absent"]) + "\n")
    out = root / "ours"
    done = course_grade(course, out, "--roster", str(roster))
    run_nbgrader(["autograde", NAME, "--force", "--OverwriteCells.add_missing_cells=True"], cwd=course)
    reports = out / "reports" / NAME
    results = {p.stem: json.loads(p.read_text()) for p in (reports / "results").glob("*.json")}
    return {"course": course, "out": out, "stdout": done.stdout, "results": results, "reports": reports}


@needs_sandbox
@pytest.mark.parametrize("student", sorted(SUBMISSIONS))
def test_each_cell_scores_as_nbgrader_autograde_scores_it(graded, student):
    ours = {gid: cell["score"] for gid, cell in graded["results"][student]["cells"].items()}
    assert ours == nbgrader_scores(graded["course"])[student]
    assert ours == EXPECTED[student]
    assert graded["results"][student]["score"] == sum(s or 0 for s in EXPECTED[student].values())
    assert graded["results"][student]["max_score"] == 6


@needs_sandbox
def test_statuses_and_what_the_matching_repaired(graded):
    results = graded["results"]
    assert {student: r["status"] for student, r in results.items()} == STATUSES
    assert any("'test_mean' was missing" in n for n in results["deleted_test"]["notes"])
    assert any("'test_read_celsius' was edited" in n for n in results["edited_test"]["notes"])
    assert results["absent"]["score"] == 0


@needs_sandbox
def test_why_a_test_cell_scored_what_it_did(graded):
    cells = {s: r["cells"] for s, r in graded["results"].items()}
    assert cells["raises_in_test"]["test_read_celsius"]["message"].startswith("failed: IndexError")
    assert cells["wrong_answer"]["test_mean"]["message"].startswith("failed: AssertionError")
    assert cells["partial_credit"]["test_fahrenheit"]["message"] == "partial credit: the test cell's value is 1"
    assert "standard error" in cells["writes_stderr"]["test_fahrenheit"]["message"]


@needs_sandbox
def test_manual_cells_are_left_for_the_formgrader(graded):
    results = graded["results"]
    assert results["all_right"]["cells"]["warmest_day"]["message"] == plain_nbgrader.MANUAL
    assert results["all_right"]["manual"] == ["warmest_day"]
    assert results["blank"]["comments"]["warmest_day"] == "No response."
    summary = json.loads((graded["reports"] / "summary.json").read_text())
    assert summary["needs_manual_grading"] == {"all_right": ["warmest_day"]}
    with gradebook.open_gradebook(gradebook.sqlite_url(graded["out"] / "gradebook.db"), "sdpa-course") as gb:
        nb = gb.find_submission_notebook("part2_summary", NAME, "all_right")
        waiting = {g.name for g in nb.grades if g.needs_manual_grade}
    assert waiting == {"warmest_day"}


@needs_sandbox
def test_our_gradebook_holds_nbgraders_scores_for_both_notebooks(graded):
    with gradebook.open_gradebook(gradebook.sqlite_url(graded["out"] / "gradebook.db"), "sdpa-course") as gb:
        ours = gradebook.cell_scores(gb, NAME, auto=True)
        by_notebook = {nb: gradebook.cell_scores(gb, NAME, notebook=nb, auto=True) for nb in ("part1_read_data",)}
    assert ours == nbgrader_scores(graded["course"])
    assert set(by_notebook["part1_read_data"]["partial_credit"]) == {"test_read_celsius", "test_fahrenheit"}


@needs_sandbox
def test_feedback_covers_each_notebook_and_hides_the_hidden_tests(graded):
    feedback = graded["out"] / "feedback"
    for student in SUBMISSIONS:
        pages = {p.name: p.read_text() for p in (feedback / student / NAME).glob("*.html")}
        assert set(pages) == {"part1_read_data.html", "part2_summary.html"}, student
        for text in pages.values():
            assert not [line for line in HIDDEN if line in text], student
        autograded = graded["out"] / "autograded" / student / NAME
        assert {p.name for p in autograded.glob("*.ipynb")} == {PART1, PART2}
    assert not (feedback / "absent").exists()
    page = (feedback / "all_right" / NAME / "part2_summary.html").read_text()
    assert "not graded yet (up to 2 points)" in page and html.escape(plain_nbgrader.MANUAL) in page
    assert "1 / 2 points: partly right" in (feedback / "partial_credit" / NAME / "part1_read_data.html").read_text()


@needs_sandbox
def test_reports_and_the_threat_model(graded):
    reports = graded["reports"]
    rows = {r["student_id"]: r for r in csv.DictReader((reports / "student_scores.csv").read_text().splitlines())}
    assert set(rows) == {*SUBMISSIONS, "absent"}
    totals = {student: sum(s or 0 for s in cells.values()) for student, cells in EXPECTED.items()}
    for student, total in totals.items():
        assert float(rows[student]["score"]) == total
    # The LMS files: one row per student who sent something (the absent one left out: no grade cleared);
    # without a roster mapping Canvas could match nobody, so its file is not written.
    want = sorted(f"{t:g}" for t in totals.values())
    assert not (reports / "canvas_import.csv").exists()
    moodle = list(csv.reader((reports / "moodle_import.csv").read_text().splitlines()))
    assert sorted(row[-1] for row in moodle[1:]) == want
    summary = (reports / "summary.txt").read_text()
    assert plain_nbgrader.THREAT_MODEL in summary and plain_nbgrader.THREAT_MODEL in graded["stdout"]
    assert "the learner's own process" in summary  # the risk it names first


@needs_sandbox
def test_a_changed_second_notebook_is_graded_again(release, tmp_path):
    """The cache key covers every notebook: a resubmitted part 2 alone is graded again."""
    course = copy_of(release, tmp_path)
    make_submissions(course, {"wrong_answer": SUBMISSIONS["wrong_answer"]})
    out = tmp_path / "ours"
    course_grade(course, out)
    first = json.loads((out / "reports" / NAME / "results" / "wrong_answer.json").read_text())
    part2 = course / "submitted" / "wrong_answer" / NAME / PART2
    nbformat.write(learner_notebook(course / "exercises" / NAME / PART2, RIGHT2), part2)
    again = course_grade(course, out)
    second = json.loads((out / "reports" / NAME / "results" / "wrong_answer.json").read_text())
    assert "already graded" not in again.stderr
    assert (first["cells"]["test_mean"]["score"], second["cells"]["test_mean"]["score"]) == (0.0, 1.0)
    unchanged = course_grade(course, out)
    reused = re.search(r"(\d+) of (\d+) submissions already graded", unchanged.stderr)
    assert reused and reused.groups() == ("1", "1"), unchanged.stderr


def test_the_template_is_not_released_to_learners():
    """The template stays out of exercises/ (the learners' kit and site) until an instructor releases it."""
    assert (REPO / "solutions" / NAME / PART1).is_file()
    assert not (REPO / "exercises" / NAME).exists()


@needs_sandbox
def test_an_endless_loop_stops_its_own_notebook_only(release, tmp_path):
    """A test cell that never ends is stopped at the time limit and scores 0; the other notebook is unharmed."""
    course = copy_of(release, tmp_path)
    endless = "def fahrenheit(celsius):\n    while True:\n        pass"
    make_submissions(course, {"endless": (RIGHT1 | {"fahrenheit": endless}, RIGHT2, (), {})})
    out = tmp_path / "ours"
    course_grade(course, out, "--timeout", "6")
    result = json.loads((out / "reports" / NAME / "results" / "endless.json").read_text())
    assert result["status"] == "timed_out"
    scores = {gid: cell["score"] for gid, cell in result["cells"].items()}
    assert scores == {"test_read_celsius": 1.0, "test_fahrenheit": 0.0, "test_mean": 1.0, "warmest_day": 0.0}
    assert "time ran out" in result["cells"]["test_fahrenheit"]["message"]


def unreleased_copy(root: Path) -> Path:
    """A course whose exercises/ holds the template's sources as they are (enough for reading, not grading)."""
    course = root / "course"
    shutil.copytree(REPO / "solutions" / NAME, course / "solutions" / NAME)
    shutil.copytree(REPO / "solutions" / NAME, course / "exercises" / NAME)
    return course


def test_a_cell_id_used_twice_in_one_notebook_is_refused_by_name(tmp_path, monkeypatch):
    """Two notebooks may share a grade id, as in nbgrader (tests/test_nbgrader_scenarios.py grades such an
    assignment); one notebook may not."""
    monkeypatch.setenv("COURSE_GRADING_SECRET", SECRET)
    course = unreleased_copy(tmp_path)
    release = course / "exercises" / NAME / PART1
    nb = nbformat.read(release, as_version=4)
    twin = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "test_read_celsius")
    nb.cells.append(nbformat.from_dict({**twin, "id": "twin-of-test-read-celsius"}))
    nbformat.write(nb, release)
    with pytest.raises(assignment.SetupError, match="'test_read_celsius' is twice in " + PART1):
        assignment.load_assignment(course, NAME)


def test_a_data_folder_and_a_missing_release_get_clear_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SECRET", SECRET)
    course = unreleased_copy(tmp_path)
    (course / "exercises" / NAME / "data").mkdir()
    with pytest.raises(assignment.SetupError, match="put the assignment's data files next to its notebooks"):
        assignment.load_assignment(course, NAME)
    shutil.rmtree(course / "exercises" / NAME)
    assert f"run ./course release {NAME} first" in assignment.unknown_message(course, NAME)


def test_a_folder_per_student_keeps_each_students_notebooks_together(tmp_path, monkeypatch):
    """Outside nbgrader's layout, a folder per student holding both notebooks (the guide's other layout)."""
    monkeypatch.setenv("COURSE_GRADING_SECRET", SECRET)
    info = assignment.load_assignment(unreleased_copy(tmp_path), NAME)
    root = tmp_path / "export"
    for student in ("ann", "ben"):
        (root / student).mkdir(parents=True)
        shutil.copy(REPO / "solutions" / NAME / PART1, root / student / PART1)
    shutil.copy(REPO / "solutions" / NAME / PART2, root / "ann" / PART2)
    subs = {s.student: s for s in intake.discover(root, NAME, info.notebook)}
    assert plain_grade.submitted_notebooks(info, subs["ann"]) == {
        PART1: root / "ann" / PART1,
        PART2: root / "ann" / PART2,
    }
    assert plain_grade.submitted_notebooks(info, subs["ben"]) == {PART1: root / "ben" / PART1, PART2: None}


# The commands of solution_book/guide_own_assignment.md, in the order it gives them.
GUIDE_STEPS = (
    "cp -r solutions/hw_template_plain solutions/hw10_weather",
    "./course release hw10_weather",
    "./course grade hw10_weather submitted/",
)


def test_the_guide_page_shows_these_steps():
    page = (REPO / "solution_book" / "guide_own_assignment.md").read_text(encoding="utf-8")
    assert [step for step in GUIDE_STEPS if step in page] == list(GUIDE_STEPS)


@needs_sandbox
def test_the_guides_steps_copy_release_and_grade_an_assignment_of_your_own(tmp_path):
    """A copy of the course, the guide's commands run as written, one learner's right answers."""
    course = copy_course(tmp_path / "course")
    (course / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)
    env = env_for(course) | {"COURSE_GRADING_SECRET": SECRET}
    cp, release, grade = GUIDE_STEPS
    done = subprocess.run(cp.split(), cwd=course, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(release.split(), cwd=course, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    released = course / "exercises" / "hw10_weather"
    assert sorted(p.name for p in released.iterdir()) == sorted([PART1, PART2, "temperatures.csv"])
    folder = course / "submitted" / "alice" / "hw10_weather"
    folder.mkdir(parents=True)
    for name, answers in ((PART1, RIGHT1), (PART2, RIGHT2 | {"warmest_day": WARMEST})):
        nbformat.write(learner_notebook(released / name, answers), folder / name)
    shutil.copy(released / "temperatures.csv", folder)
    done = subprocess.run(grade.split(), cwd=course, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((course / "reports" / "hw10_weather" / "results" / "alice.json").read_text())
    assert {gid: cell["score"] for gid, cell in result["cells"].items()} == EXPECTED["all_right"]
