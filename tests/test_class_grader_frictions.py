"""What an instructor's first term found rough in the class grader, each checked here.

The summary's means and the histogram count the same students and say so;
``<student>__<anything>.ipynb`` files are not "renamed"; the feedback page
typesets math offline, leads chapter links to the published book, shows times
in the late policy's zone and says a cell's points and verdict in agreeing
words; the learner's "check before you submit" is not run by the grader (it
would say the reference cannot be imported); an endless loop's feedback says
which cell, what it means and what to do; a wrong assignment name lists the
right ones.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import get_args

import nbformat
import pytest
from test_class_grading import LIMITS, needs_sandbox, quiet

from classgrader import cli, settings
from classgrader.books import class_reports
from classgrader.pipeline import intake
from classgrader.pipeline.class_run import grade_class
from classgrader.records import STATUSES, Result, Status, new_result
from classgrader.stages import record, report
from classgrader.stages.grade import Settings
from classgrader.stages.scoring import Verdict, _verdict
from devtools.sample_submissions import Builder

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"
RELEASE = REPO / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


def result(student: str, status: str, score: float) -> Result:
    r = new_result(
        student=student,
        assignment=ASSIGNMENT,
        notebook=ASSIGNMENT,
        display_name="",
        timestamp=None,
        submitted_file="",
        layout="nbgrader",
        ignored_files=[],
        max_score=10.0,
        key="k",
        status=status,
    )
    r["score"] = score
    return r


# ---------------------------------------------------------------- the summary and the histogram


def test_the_mean_counts_the_submissions_as_the_histogram_does_and_says_so():
    results = [result("a", "graded", 10), result("b", "graded", 6), result("c", "timed_out", 2)]
    results += [result("m1", "missing", 0), result("m2", "missing", 0)]
    s = class_reports.summary(results, assignment=ASSIGNMENT, seconds=1, workers=1)
    assert s["mean_score"] == pytest.approx((10 + 6 + 2) / 3)  # not (10 + 6 + 2) / 5
    assert (s["submissions"], s["missing"]) == (3, 2)
    line = next(line for line in class_reports.summary_text(s).splitlines() if "mean score" in line)
    assert [float(n) for n in re.findall(r"\d+(?:\.\d+)?", line)] == [6, 10, 3, 2], line  # mean, of, over, missing
    assert "not counted" in line


def test_the_histogram_title_counts_the_same_submissions(tmp_path):
    results = [result("a", "graded", 10), result("m", "missing", 0)]
    class_reports.histogram(results, tmp_path / "h.png", assignment=ASSIGNMENT)
    from PIL import Image

    with Image.open(tmp_path / "h.png") as image:
        title, description = image.info["Title"], image.info["Description"]
    assert title == f"{ASSIGNMENT}: scores of 1 submissions (1 missing)"
    assert description.endswith("1 student with no submission not counted, as in the mean")


# ---------------------------------------------------------------- file names


def test_double_underscore_names_are_the_instructors_and_not_renamed(tmp_path):
    data = RELEASE.read_bytes()
    (tmp_path / "alice__x.ipynb").write_bytes(data)
    (tmp_path / f"bob__{ASSIGNMENT}.ipynb").write_bytes(data)
    (tmp_path / "cyd__notes.pdf").write_bytes(b"%PDF")
    (tmp_path / "Doe Jo_77_assignsubmission_file_my_softmax.ipynb").write_bytes(data)  # the learner's own name
    subs = {s.student: s for s in intake.discover(tmp_path, ASSIGNMENT, RELEASE.name)}
    assert (subs["alice"].renamed, subs["bob"].renamed) == (False, False)
    assert subs["cyd"].renamed  # not a notebook at all
    assert subs["77"].renamed  # Moodle keeps the learner's file name: that one was renamed


# ---------------------------------------------------------------- an unknown assignment name


def test_a_wrong_or_partial_assignment_name_lists_the_valid_names(capsys, tmp_path):
    assert cli.main(["hw2", str(tmp_path), "--course", str(REPO)]) == 2
    err = capsys.readouterr().err
    assert "'hw2'" in err and "did you mean hw2_stable_softmax?" in err
    assert all(folder.name in err for folder in (REPO / "exercises").iterdir()), err
    assert cli.main(["homework_two", "--analyse-only", "--course", str(REPO)]) == 2
    err = capsys.readouterr().err
    assert "'homework_two'" in err and all(folder.name in err for folder in (REPO / "exercises").iterdir()), err


# ---------------------------------------------------------------- the feedback page


def page_for(res: Result, *, base_url: str | None = None, late_record: dict | None = None) -> str:
    nb = nbformat.read(RELEASE, as_version=4)
    res["cells"] = {"softmax_basic": {"points": 2.0, "score": 1.0, "message": "half right", "passed": False}}
    if late_record:
        res["late"] = late_record  # type: ignore[typeddict-item]
    return report.render(res, nb, base_url=base_url)


def test_math_is_typeset_as_mathml_not_left_as_latex():
    page = page_for(result("a", "graded", 1))
    markdown = "".join(c.source for c in nbformat.read(RELEASE, as_version=4).cells if c.cell_type == "markdown")
    formulas = re.findall(r"\$([^$]+)\$", markdown)
    assert formulas, "the release has math"
    assert page.count("<math") >= len(formulas)
    assert "10^4" not in page and "$" not in page
    assert "<script" not in page and "src=" not in page and "<link" not in page  # offline: nothing fetched


def test_a_learners_formula_cannot_carry_markup():
    learner = nbformat.v4.new_markdown_cell(r"Mine: $\text{<script>alert(1)</script>}$ and $a < b$.")
    nb = nbformat.v4.new_notebook(cells=[learner])
    page = report.render(result("a", "graded", 1), nb)
    assert "<script>" not in page
    assert '<code class="tex">\\text{&lt;script&gt;alert(1)&lt;/script&gt;}</code>' in page
    assert "<math" in page  # the harmless formula is still typeset


def test_chapter_links_lead_to_the_published_book():
    page = page_for(result("a", "graded", 1), base_url="https://example.org/attention/")
    assert 'href="https://example.org/attention/chapters/01_self_attention.html"' in page
    assert ".md" not in re.sub(r"<math.*?</math>", "", page, flags=re.S)


def test_without_a_book_address_chapter_links_become_plain_text_naming_the_chapter():
    page = page_for(result("a", "graded", 1))
    assert "chapters/" not in page and "href" not in page
    assert '<span class="chapter">Chapter 1</span>' in page and "01_self_attention" in page


def test_the_book_address_comes_from_the_grader_settings(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.Feedback.book_url = 'https://example.org/b'\n")
    assert settings.read(tmp_path).feedback.book_url == "https://example.org/b/"
    assert settings.read(REPO).feedback.book_url is None  # the repository names no published address


def test_times_are_shown_in_the_policys_zone():
    late_record = {
        "submitted_at": "2026-07-02T08:30:00+00:00",
        "deadline": "2026-07-01T21:59:00+00:00",
        "timezone": "Europe/Berlin",
        "penalty": 1.0,
        "final_score": 0.0,
        "note": "late",
        "status": "late",
    }
    page = page_for(result("a", "graded", 1), late_record=late_record)
    # Berlin is UTC+2 in July: 08:30 UTC is 10:30 there, and 21:59 UTC is 23:59.
    shown = re.findall(r"(\d{4}-\d\d-\d\d \d\d:\d\d) \(([\w/]+), UTC([-+]\d\d:\d\d)\)", page)
    assert shown == [("2026-07-02 10:30", "Europe/Berlin", "+02:00"), ("2026-07-01 23:59", "Europe/Berlin", "+02:00")]
    assert page.index("Submitted at") < page.index("2026-07-02 10:30") < page.index("deadline")


def test_a_cells_verdict_agrees_with_its_points():
    page = page_for(result("a", "graded", 1))
    verdict = re.search(r"<strong>softmax_basic</strong>: ([\d.]+) / ([\d.]+) points: ([\w ]+)\.", page)
    assert verdict and verdict.groups() == ("1", "2", "partly right"), verdict
    half = Verdict(False, 0.5, "Case 1 of 2: off (0 of 2 cases fully right)")
    line = record._verdict_line(half, {"points": 2.0, "score": 1.0, "message": "", "passed": False})
    assert line.startswith("partly right, 1 of 2 points: ") and "FAILED" not in line
    none = record._verdict_line(Verdict(False, 0.0, "wrong"), {"points": 2.0, "score": 0.0, "message": ""})
    assert none == "FAILED, 0 of 2 points: wrong\n"
    assert record._verdict_line(Verdict(True, 1.0, "ok"), {"points": 2.0, "score": 2.0, "message": ""}).startswith(
        "passed: "
    )


def test_a_check_stopped_at_its_budget_says_what_that_means():
    class Check:
        id, functions = "softmax_basic", ["softmax_rows"]

    class Runs:
        checks = {
            "softmax_basic": {
                "event": "check",
                "id": "softmax_basic",
                "status": "timeout",
                "error": "SandboxTimeout: time budget exceeded",
            }
        }

    v = _verdict(Check(), Runs())  # type: ignore[arg-type]
    assert "SandboxTimeout" not in v.message and "softmax_rows() did not return" in v.message
    assert "loop that never ends" in v.message


# ---------------------------------------------------------------- graded for real


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("frictions")
    builder = Builder(REPO, ASSIGNMENT)
    submitted = builder.write_submitted(root, ["solution", "infinite_loop"])
    grade_class(
        REPO,
        ASSIGNMENT,
        submitted,
        out=root,
        workers=2,
        settings=Settings(limits=LIMITS, kernel_record=False),
        progress=False,
        log=quiet,
        analyse=False,  # the item analysis is tested on its own (tests/test_item_analysis.py)
    )
    return root


@needs_sandbox
def test_the_feedback_does_not_run_the_learners_own_check(graded):
    page = (graded / "feedback" / "solution" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    outputs = re.findall(r'<pre class="out[^"]*">(.*?)</pre>', page, flags=re.S)
    assert outputs, "the page shows the cells' outputs"
    assert not [o for o in outputs if "cannot be imported here" in o or "Nothing was checked" in o]
    assert html.unescape(outputs[-1]) == record.SELF_CHECK_NOT_RUN  # the grader's note in place of the learner's check
    result = json.loads((graded / "reports" / ASSIGNMENT / "results" / "solution.json").read_text())
    assert result["score"] == 10.0


@needs_sandbox
def test_an_endless_loop_is_explained_in_the_learners_terms(graded):
    page = (graded / "feedback" / "infinite_loop" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "SandboxTimeout" not in page and "time budget exceeded" not in page
    assert "time ran out" in page and "loop that never ends" in page
    assert re.search(r"cell \d+ was still running", page), "the message names the cell"
    assert "Kernel, Interrupt" in page


def test_the_feedback_page_keeps_the_title_but_not_the_start_here_instructions():
    page = page_for(result("a", "graded", 1))
    assert re.search(r"<h1>Homework 2\b", page)
    assert "Where to work" not in page and "kit/" not in page and "Hand it in" not in page


def test_the_status_type_names_exactly_the_statuses_that_have_a_meaning():
    assert list(get_args(Status)) == list(STATUSES)
