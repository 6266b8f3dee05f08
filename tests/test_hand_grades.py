"""Hand grades from nbgrader's formgrader counted as nbgrader counts them (``classgrader.books.hand_grades``).

The whole round (the formgrader in a browser, the reports, nbgrader's own
feedback) is ``test_browser_formgrader.py``; here, what a hand score does to
one result: it replaces the autograder's score of that cell (nbgrader's
``Grade.score``), a late penalty is priced again on the new raw score, and the
saved result is left as the autograder made it.
"""

from __future__ import annotations

import copy
from pathlib import Path

from classgrader.after_deadline import late
from classgrader.books.hand_grades import HandGrades, apply
from classgrader.pipeline import intake
from classgrader.records import new_result

# 50 % of the maximum (1.5 of 3 points) per started day late, never below 0.
POLICY = late.make_policy("hw_template_plain", {"deadline": "2026-03-01 23:59:00", "penalty": "50%"})
SUBMITTED = "2026-03-02 10:00:00+00:00"


def graded() -> dict:
    """A two-cell result as the autograder left it: the test cell passed, the written answer waits."""
    r = new_result(
        student="ada",
        assignment="hw_template_plain",
        notebook="part2_summary",
        display_name="",
        timestamp=SUBMITTED,
        submitted_file="part2_summary.ipynb",
        layout="nbgrader",
        ignored_files=[],
        max_score=3.0,
        key="k",
        status="graded",
    )
    r["cells"] = {
        "test_mean": {"points": 1.0, "score": 1.0, "message": "passed", "passed": True},
        "warmest_day": {"points": 2.0, "score": None, "message": "needs manual grading", "passed": None},
    }
    r["score"], r["manual"] = 1.0, ["warmest_day"]
    late.annotate(r, intake.Submission("ada", Path("part2_summary.ipynb"), timestamp=SUBMITTED), POLICY)
    return r


def test_a_hand_score_counts_and_the_late_penalty_is_priced_on_the_new_raw_score():
    r = graded()
    assert late.final_score(r) == 0.0  # one day late: the 1.5 points take all of the 1
    saved = copy.deepcopy(r)
    shown = apply(r, HandGrades({"warmest_day": 2.0}, {"warmest_day": "Right."}), POLICY)
    assert (shown["score"], late.final_score(shown)) == (3.0, 1.5)
    assert shown["manual"] == [] and shown["hand_comments"] == {"warmest_day": "Right."}
    assert r == saved, "the result as graded is left alone"


def test_a_hand_score_overrides_an_autograded_cell_and_says_what_the_tests_gave():
    shown = apply(graded(), HandGrades({"test_mean": 0.5}, {}), POLICY)
    cell = shown["cells"]["test_mean"]
    assert (cell["score"], cell["passed"], cell.get("by_hand")) == (0.5, False, True)
    assert "1" in cell["message"]  # what the tests gave
    assert shown["score"] == 0.5 and shown["manual"] == ["warmest_day"]
