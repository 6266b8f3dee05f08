"""After ``./course grade``, the instructor reviews the class in nbgrader's formgrader, as the guide says.

The template assignment (``solutions/hw_template_plain``: two notebooks and a
written answer graded by hand) is released in a scratch course, two learners
hand in (one answers everything, one hands in the release) and ``./course
grade`` grades them into the course folder. JupyterLab, with nbgrader's
extensions as the course installs them, runs in that folder on 127.0.0.1;
Chromium opens it and does what the instructors' guide
(``guide_own_assignment.md``) tells the instructor to do: **Nbgrader >
Formgrader**, the assignment, the notebook, the learner's submission; there a
score and a comment for the hand-graded answer. The next ``./course grade``
(which grades nothing again) counts that score in the reports and the LMS
file and shows the comment on the learner's feedback page, and nbgrader's own
``generate_feedback`` shows both too.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser import SCREENSHOTS, BookBrowser, chromium_for
from local_server import free_port, stop, wait_until_up
from playwright.sync_api import expect
from test_class_grading import needs_sandbox
from test_plain_nbgrader_assignment import NAME, SUBMISSIONS, course_grade, make_submissions, released_course

from classgrader.books import gradebook
from nbgrader_tools.scratch_course import nbgrader_env, run_nbgrader

STUDENTS = ("all_right", "blank")
COMMENT = "Saturday is right, and you named the column you read."
HAND_SCORE = 2  # the written answer's points: full marks by hand
# The auto scores of the two submissions (test_plain_nbgrader_assignment.EXPECTED): 4 of 6 and 0.
AUTO_TOTAL = {"all_right": 4.0, "blank": 0.0}
TOKEN = "formgrader-test-token"


@dataclass
class Lab:
    course: Path
    origin: str

    def url(self, path: str) -> str:
        return f"{self.origin}/{path.lstrip('/')}"


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory) -> Path:
    """The template released, two submissions, graded by ``./course grade`` into the course folder."""
    root = tmp_path_factory.mktemp("formgrader")
    course = released_course(root)
    # As the term guide's set-up writes it: the formgrader needs an exchange to list the assignments.
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(f"c.Exchange.root = {str(root / 'exchange')!r}\n")
    (root / "exchange").mkdir()
    make_submissions(course, {s: SUBMISSIONS[s] for s in STUDENTS})
    course_grade(course, course)
    return course


@pytest.fixture(scope="module")
def lab(graded_course: Path, tmp_path_factory) -> Iterator[Lab]:
    """``jupyter lab`` in the course folder (what ``./course lab`` runs), on 127.0.0.1 only."""
    home = tmp_path_factory.mktemp("lab-home")
    port = free_port()
    # The account's own Jupyter settings stay out of it. (JupyterLab's news and update checks ask
    # first, and the test's Chromium can reach nothing but this server.)
    env = nbgrader_env() | {"JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    cmd = [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", "--ServerApp.ip=127.0.0.1"]
    cmd += [f"--ServerApp.port={port}", f"--IdentityProvider.token={TOKEN}", "--ServerApp.open_browser=False"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = home / "lab.log"
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, cwd=graded_course, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        origin = f"http://127.0.0.1:{port}"
        wait_until_up(f"{origin}/api/status?token={TOKEN}", process, log, "JupyterLab")
        yield Lab(graded_course, origin)
    finally:
        stop(process)


@pytest.fixture(scope="module")
def lab_browser(lab: Lab) -> Iterator[BookBrowser]:
    with chromium_for(lab) as browser:
        yield browser


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"formgrader-{name}.png"))


def _hand_grade(lab: Lab, lab_browser: BookBrowser) -> dict[str, str]:
    """The guide's steps in the formgrader; returns what its submissions table showed, by student."""
    context = lab_browser.new_context()
    try:
        page = context.new_page()
        page.goto(lab.url(f"lab?token={TOKEN}"))
        page.locator(".jp-LabShell").wait_for()
        page.get_by_role("menuitem", name="Nbgrader").click()
        page.get_by_role("menuitem", name="Formgrader").click()
        frame = page.frame_locator("iframe").first
        # Each click waits for the page it leads to (its breadcrumb), so none lands on the page before.
        here = frame.locator("ol.breadcrumb li.active")
        frame.get_by_role("link", name="Manual Grading").first.click()
        expect(here).to_have_text("Manual Grading")
        frame.get_by_role("link", name=NAME, exact=True).click()
        expect(here).to_have_text(NAME)
        frame.get_by_role("link", name="part2_summary", exact=True).click()
        expect(here).to_have_text("part2_summary")
        rows = frame.locator("#main-table tr")
        expect(rows).to_have_count(len(STUDENTS))
        # The table names "Submission #1" and so on until asked; its button shows every name.
        expect(frame.locator("td .glyphicon.name-hidden").first).to_be_visible()
        toggle = frame.locator("#toggle_names")
        toggle.click()
        expect(toggle).to_have_text("Hide All Names")
        frame.get_by_role("link", name="all_right", exact=True).wait_for()
        table = {}
        for n in range(rows.count()):
            cells = rows.nth(n).locator("td")
            table[cells.nth(1).inner_text().strip()] = cells.nth(2).inner_text().strip()
        _shot(page, "1-submissions")
        frame.get_by_role("link", name="all_right").click()
        score = frame.locator("#warmest_day")
        score.wait_for()
        # The formgrader saves each field when it changes (a PUT to its API), then says so.
        with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT") as saved:
            score.fill(str(HAND_SCORE))
            score.press("Tab")
        assert saved.value.ok, f"the formgrader did not save the score: {saved.value.status}"
        comment = frame.locator("#warmest_day-comment")
        with page.expect_response(lambda r: "/formgrader/api/comment/" in r.url and r.request.method == "PUT") as said:
            comment.fill(COMMENT)
            comment.press("Tab")
        assert said.value.ok, f"the formgrader did not save the comment: {said.value.status}"
        _shot(page, "2-graded-by-hand")
        return table
    finally:
        context.close()


@needs_sandbox
def test_the_instructor_grades_by_hand_in_the_formgrader_and_the_reports_count_it(lab, lab_browser):
    course = lab.course
    reports = course / "reports" / NAME
    before = json.loads((reports / "summary.json").read_text())
    assert before["needs_manual_grading"] == {"all_right": ["warmest_day"]}
    graded_at = json.loads((reports / "results" / "all_right.json").read_text())["graded_at"]

    table = _hand_grade(lab, lab_browser)
    # Part 2's auto scores, as ./course grade wrote them: all_right's test cell (1 of 1), blank's nothing.
    assert table == {"all_right": "1 / 3", "blank": "0 / 3"}
    with gradebook.open_gradebook(gradebook.sqlite_url(course / "gradebook.db"), "sdpa-course") as gb:
        grade = gb.find_grade("warmest_day", "part2_summary", NAME, "all_right")
        typed = gb.find_comment("warmest_day", "part2_summary", NAME, "all_right").manual_comment
        assert (grade.manual_score, typed) == (HAND_SCORE, COMMENT)

    course_grade(course, course)
    rows = {r["student_id"]: r for r in csv.DictReader((reports / "student_scores.csv").read_text().splitlines())}
    assert {s: float(rows[s]["score"]) for s in STUDENTS} == {
        "all_right": AUTO_TOTAL["all_right"] + HAND_SCORE,
        "blank": AUTO_TOTAL["blank"],
    }
    moodle = {row[0]: row[1] for row in list(csv.reader((reports / "moodle_import.csv").read_text().splitlines()))[1:]}
    assert float(moodle["all_right"]) == AUTO_TOTAL["all_right"] + HAND_SCORE
    assert json.loads((reports / "summary.json").read_text())["needs_manual_grading"] == {}
    saved = json.loads((reports / "results" / "all_right.json").read_text())
    assert saved["graded_at"] == graded_at, "an unchanged submission is not graded again"
    assert saved["cells"]["warmest_day"]["score"] is None, "the saved result keeps what the autograder gave"

    page = (course / "feedback" / "all_right" / NAME / "part2_summary.html").read_text()
    shown = re.search(r'<div class="comment">(.*?)</div>', page)
    assert shown is not None and COMMENT in shown.group(1)
    assert f"warmest_day</strong>: {HAND_SCORE} / {HAND_SCORE} points" in page

    # nbgrader's own feedback, from the same gradebook, says the same.
    run_nbgrader(["generate_feedback", NAME, "--force"], cwd=course)
    theirs = (course / "feedback" / "all_right" / NAME / "part2_summary.html").read_text()
    assert COMMENT in theirs
    total = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", re.sub(r"<[^>]+>", " ", theirs))
    assert total is not None and float(total.group(1)) == 1 + HAND_SCORE  # this notebook's: the test cell and by hand
