"""Item analysis from a gradebook whose scores are set by hand here (no grading runs).

Five students' scores on hw2's four graded cells are written into a fresh
nbgrader gradebook, with the messages a check would give; one score is then
changed by a manual grade, as an instructor would in formgrader. The pass
rates, counts, means and message counts are recomputed below from the table
itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from classgrader import settings
from classgrader.after_deadline import item_analysis
from classgrader.books import gradebook, nbgrader_record
from classgrader.records import write_json_atomic

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"
POINTS = {"softmax_basic": 2.0, "softmax_large": 2.0, "softmax_masked": 2.0, "softmax_hidden": 4.0}
SCORES = {  # student -> cell -> score
    "ann": {"softmax_basic": 2, "softmax_large": 2, "softmax_masked": 2, "softmax_hidden": 4},
    "bob": {"softmax_basic": 2, "softmax_large": 0, "softmax_masked": 2, "softmax_hidden": 1},
    "cid": {"softmax_basic": 1, "softmax_large": 0, "softmax_masked": 0, "softmax_hidden": 2},
    "dee": {"softmax_basic": 2, "softmax_large": 0, "softmax_masked": 2, "softmax_hidden": 4},
    "eve": {"softmax_basic": 0, "softmax_large": 2, "softmax_masked": 0, "softmax_hidden": 0},
}
OVERFLOW = "row {} of case {} holds NaN: did exp overflow? subtract each row's maximum first"
MESSAGES = {
    ("bob", "softmax_large"): OVERFLOW.format(0, 1),
    ("cid", "softmax_large"): OVERFLOW.format(1, 2),
    ("dee", "softmax_large"): "the output is float64 but the input was float32",
    ("cid", "softmax_masked"): "a row of -inf gave NaN instead of zeros",
    ("eve", "softmax_masked"): "a row of -inf gave NaN instead of zeros",
}


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    root = tmp_path_factory.mktemp("items")
    url = gradebook.sqlite_url(root / "gradebook.db")
    config = settings.read(REPO).nbgrader
    nbgrader_record.ensure(REPO, ASSIGNMENT, [f"{ASSIGNMENT}.ipynb"], url, "sdpa-course", config, refresh=False)
    reports = root / "reports" / ASSIGNMENT
    with gradebook.Writer(url, "sdpa-course") as w:
        for student, cells in SCORES.items():
            result = {
                "student": student,
                "assignment": ASSIGNMENT,
                "notebook": ASSIGNMENT,
                "comments": {},
                "cells": {
                    gid: {
                        "points": POINTS[gid],
                        "score": float(v),
                        "message": MESSAGES.get((student, gid), "all cases match"),
                    }
                    for gid, v in cells.items()
                },
            }
            w.write(result)
            write_json_atomic(reports / "results" / f"{student}.json", result)
    # An instructor's manual grade: eve's softmax_basic becomes 2 (full) in formgrader.
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id="sdpa-course") as gb:
        gb.find_grade("softmax_basic", ASSIGNMENT, ASSIGNMENT, "eve").manual_score = 2.0
        gb.db.commit()
    analysis = item_analysis.write(
        url, "sdpa-course", ASSIGNMENT, reports, order=item_analysis.release_order(REPO, ASSIGNMENT)
    )
    return {"analysis": analysis, "reports": reports}


def effective() -> dict[str, dict[str, float]]:
    scores = {s: dict(c) for s, c in SCORES.items()}
    scores["eve"]["softmax_basic"] = 2  # the manual grade wins
    return scores


def test_pass_rates_counts_and_means_per_cell(analysed):
    items = {it["cell"]: it for it in analysed["analysis"]["cells"]}
    assert list(items) == list(POINTS)  # the release's order
    scores = effective()
    for cell, pts in POINTS.items():
        got = [scores[s][cell] for s in sorted(scores)]
        it = items[cell]
        assert it["students"] == 5
        assert it["full"] == sum(v == pts for v in got)
        assert it["zero"] == sum(v == 0 for v in got)
        assert it["partial"] == sum(0 < v < pts for v in got)
        assert it["pass_rate"] == pytest.approx(it["full"] / 5)
        assert it["mean"] == pytest.approx(sum(got) / 5)
    # the same, written out by hand from the table
    assert [items[c]["full"] for c in POINTS] == [4, 2, 3, 2]
    assert items["softmax_hidden"]["partial"] == 2 and items["softmax_basic"]["partial"] == 1


def test_alike_messages_are_counted_together_most_common_first(analysed):
    items = {it["cell"]: it for it in analysed["analysis"]["cells"]}
    large = items["softmax_large"]["messages"]
    assert [(m["count"], m["message"]) for m in large] == [
        (2, "row # of case # holds NaN: did exp overflow? subtract each row's maximum first"),
        (1, "the output is float64 but the input was float32"),
    ]
    assert large[0]["example"] == OVERFLOW.format(0, 1)
    assert items["softmax_masked"]["messages"][0]["count"] == 2
    assert items["softmax_basic"]["messages"] == [
        {"message": "all cases match", "count": 1, "example": "all cases match"}
    ]  # cid's partial score


def test_the_report_page_csv_and_histograms(analysed):
    reports = analysed["reports"]
    page = (reports / "item_analysis.html").read_text()
    assert page.count("<img ") == 4 and page.count(' alt="Histogram of the scores on ') == 4
    assert (
        'alt="Histogram of the scores on softmax_hidden (4 points) of 5 submissions: 2 with full marks, '
        '2 with part of the points, 1 with none; mean 2.20."'
    ) in page
    assert "<td>40%</td>" in page  # softmax_large: 2 of 5
    for png in sorted((reports / "item_analysis").glob("*.png")):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = (reports / "item_analysis.csv").read_text().splitlines()
    assert rows[0].startswith("notebook,cell,points,students,pass_rate,full,partial,zero,mean")
    assert rows[2].startswith(f"{ASSIGNMENT},softmax_large,2,5,0.4000,2,0,3,0.8000,")
    assert json.loads((reports / "item_analysis.json").read_text())["students"] == 5


def test_histogram_colours_are_the_colour_blind_safe_blue():
    from matplotlib import image

    item = {
        "cell": "c",
        "points": 2.0,
        "scores": [0, 2, 2, 1],
        "pass_rate": 0.5,
        "mean": 1.25,
        "students": 4,
        "full": 2,
        "partial": 1,
        "zero": 1,
    }
    path = Path(__file__).parent / ".item_hist_test.png"
    try:
        item_analysis.histogram(item, path)
        pixels = (image.imread(path)[..., :3] * 255).round().astype(int).reshape(-1, 3)
    finally:
        path.unlink(missing_ok=True)
    import collections

    coloured = collections.Counter(tuple(p) for p in pixels if max(p) - min(p) > 30)  # not grey
    assert coloured.most_common(1)[0][0] == (0x00, 0x72, 0xB2)  # Okabe & Ito's blue fills the bars


def test_every_notebook_of_a_plain_assignment_with_its_hand_graded_cell(tmp_path):
    """The template (two notebooks; part2's ``warmest_day`` is graded by hand): every cell is analysed under
    its notebook's name; the hand-graded cell counts the submissions graded on it in the formgrader."""
    from nbgrader.api import Gradebook

    name, notebooks = "hw_template_plain", ["part1_read_data", "part2_summary"]
    url = gradebook.sqlite_url(tmp_path / "gradebook.db")
    config = settings.read(REPO).nbgrader
    nbgrader_record.ensure(REPO, name, [f"{nb}.ipynb" for nb in notebooks], url, "sdpa-course", config, refresh=False)
    auto = {"ann": (1, 2, 1), "bob": (1, 0, 0), "cid": (0, 2, 1)}  # test_read_celsius, test_fahrenheit, test_mean
    with gradebook.Writer(url, "sdpa-course") as w:
        for student, (read, fahrenheit, mean) in auto.items():
            cells = {"test_read_celsius": read, "test_fahrenheit": fahrenheit, "test_mean": mean}
            w.write(
                {  # type: ignore[typeddict-item]  # the keys the gradebook writer reads
                    "student": student,
                    "assignment": name,
                    "notebook": notebooks[0],
                    "notebooks": notebooks,
                    "comments": {},
                    "cells": {gid: {"score": float(v)} for gid, v in cells.items()},
                }
            )
    hand = {"ann": 2.0, "bob": 1.0}  # cid's answer is not graded yet
    with Gradebook(url, course_id="sdpa-course") as gb:
        for student, score in hand.items():
            gb.find_grade("warmest_day", notebooks[1], name, student).manual_score = score
        gb.db.commit()
    analysis = item_analysis.write(
        url, "sdpa-course", name, tmp_path / "reports", order=item_analysis.release_order(REPO, name)
    )
    cells = {it["cell"]: it for it in analysis["cells"]}
    assert [(it["notebook"], it["cell"]) for it in analysis["cells"]] == [
        ("part1_read_data", "test_read_celsius"),
        ("part1_read_data", "test_fahrenheit"),
        ("part2_summary", "test_mean"),
        ("part2_summary", "warmest_day"),
    ]
    assert cells["test_mean"]["students"] == 3 and cells["test_mean"]["mean"] == pytest.approx(2 / 3)
    hand_graded = cells["warmest_day"]
    assert (hand_graded["students"], hand_graded["not_graded_yet"], hand_graded["full"]) == (2, 1, 1)
    assert hand_graded["mean"] == pytest.approx(sum(hand.values()) / len(hand))
