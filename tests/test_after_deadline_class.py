"""After the deadline, end to end: a class of hw2 with submission times, graded by the class grader.

Seven students hand in the instructor's answers (full marks) or the blank
release (zero) at known times. The policy: deadline 2026-03-01 23:59 in
Berlin (22:59 UTC), 10% of the maximum per started day, 15 minutes' grace,
at most 30%. Each student's penalty below is worked out by hand from those
rules. The tests check student_scores.csv, the summary, the feedback pages, the
gradebook (and ``nbgrader export`` reading it), a second run with the
deadline moved, and the item analysis, whose numbers are recomputed from
what each fixture is known to score.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from test_class_grading import LIMITS, needs_sandbox, quiet

from classgrader import cli
from classgrader.after_deadline import item_analysis, late
from classgrader.pipeline.class_run import grade_class
from classgrader.stages.grade import Settings
from devtools.sample_submissions import Builder

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"
POLICY = {
    "deadline": "2026-03-01 23:59",
    "timezone": "Europe/Berlin",
    "penalty": "10%",
    "period": "day",
    "grace": "15m",
    "cap": "30%",
}

# student -> (fixture, timestamp.txt or None, expected raw score, expected penalty, late status)
CLASS = {
    "on_time": ("solution", "2026-03-01 22:00:00.000000 UTC", 10, 0, "on_time"),
    "at_deadline": ("solution", "2026-03-01 23:59:00 Europe/Berlin", 10, 0, "on_time"),
    "in_grace": ("solution", "2026-03-01 23:05:00.5 UTC", 10, 0, "in_grace"),  # 6 min late
    "two_days": ("solution", "2026-03-03 12:00:00 UTC", 10, 2, "late"),  # 37 h: 2 days
    "capped": ("solution", "2026-03-20 00:00:00 UTC", 10, 3, "late"),  # 19 days: cap 3
    "late_blank": ("blank", "2026-03-02 12:00:00 UTC", 0, 0, "late"),  # never below 0
    "bad_stamp": ("solution", "whenever I felt like it", 10, 0, "unreadable"),
    "no_stamp": ("solution", None, 10, 0, "no_time"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("after_deadline")
    builder = Builder(REPO, ASSIGNMENT)
    for student, (fixture, stamp, *_) in CLASS.items():
        name, data = builder.build(fixture)
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / name).write_bytes(data)
        if stamp is not None:
            (folder / "timestamp.txt").write_text(stamp + "\n")
    settings = Settings(limits=LIMITS, kernel_record=False)
    policy = late.make_policy(ASSIGNMENT, POLICY)
    summary = grade_class(
        REPO,
        ASSIGNMENT,
        root / "submitted",
        out=root,
        workers=2,
        settings=settings,
        progress=False,
        log=quiet,
        late_policy=policy,
    )
    reports = root / "reports" / ASSIGNMENT
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO((reports / "student_scores.csv").read_text()))}
    return {"root": root, "summary": summary, "rows": rows, "reports": reports, "settings": settings}


@needs_sandbox
def test_grades_csv_shows_raw_score_penalty_and_final_score(graded):
    rows = graded["rows"]
    assert set(rows) == set(CLASS)
    for student, (_, _, raw, penalty, status) in CLASS.items():
        row = rows[student]
        assert float(row["raw_score"]) == raw, student
        assert float(row["late_penalty"]) == penalty, student
        assert float(row["score"]) == raw - penalty, student
        assert float(row["percent"]) == pytest.approx(10 * (raw - penalty)), student
        assert (
            row["late"]
            == {
                "on_time": "on time",
                "in_grace": "in grace period",
                "late": "late",
                "unreadable": "time unreadable",
                "no_time": "time unknown",
            }[status]
        ), student
    assert rows["two_days"]["submitted_at"] == "2026-03-03T12:00:00+00:00"
    # 2026-03-03 12:00 UTC is 1 d 13 h 1 min after 22:59 UTC on 1 March: 2 started days, 2 points.
    notes = rows["two_days"]["notes"]
    assert all(said in notes for said in ("1 d 13 h 1 min", "2 started days", "penalty 2 points")), notes
    assert "capped at 30%" in rows["capped"]["notes"]
    notes = rows["bad_stamp"]["notes"]
    assert "'whenever I felt like it'" in notes and "not a date" in notes, notes  # the value it could not read
    named = re.search(r"(\S+)/timestamp\.txt", notes)  # and the file it was read from
    assert named and named[1].split("/")[-2:] == ["bad_stamp", ASSIGNMENT], notes
    assert "records no submission time" in rows["no_stamp"]["notes"]


@needs_sandbox
def test_the_summary_lists_the_late_and_the_unknown(graded):
    s = json.loads((graded["reports"] / "summary.json").read_text())
    assert s["late"] == ["capped", "late_blank", "two_days"]
    assert s["late_penalty_total"] == 5
    assert s["in_grace"] == ["in_grace"] and s["time_unknown"] == ["no_stamp"]
    assert list(s["time_unreadable"]) == ["bad_stamp"]
    assert s["mean_final_score"] == pytest.approx((7 * 10 - 5) / 8)
    assert s["late_policy"].startswith("deadline 2026-03-01T23:59:00+01:00; 10% per started day late")
    text = (graded["reports"] / "summary.txt").read_text()
    counts, _, names = next(line for line in text.splitlines() if "points of penalties" in line).partition(": ")
    assert re.findall(r"\d+", counts) == ["3", "5"] and names.split(", ") == s["late"], text


@needs_sandbox
def test_the_feedback_page_explains_the_penalty(graded):
    page = (graded["root"] / "feedback" / "two_days" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "Score: 8 / 10" in page
    penalty = re.search(r'<p class="late">(.*?)</p>', page)
    assert penalty and re.findall(r"&minus;|\d+", penalty[1]) == ["10", "&minus;", "2", "8"], penalty  # raw, -2, final
    # In the policy's zone (Berlin, UTC+1 in March): 12:00 UTC is 13:00 there; the deadline as configured.
    shown = re.findall(r"(\d{4}-\d\d-\d\d \d\d:\d\d) \(([\w/]+), UTC([-+]\d\d:\d\d)\)", page)
    assert shown == [("2026-03-03 13:00", "Europe/Berlin", "+01:00"), ("2026-03-01 23:59", "Europe/Berlin", "+01:00")]
    on_time = (graded["root"] / "feedback" / "on_time" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "Score: 10 / 10" in on_time and "late penalty" not in on_time


def gradebook_rows(root: Path) -> dict[str, dict]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="sdpa-course") as gb:
        duedate = gb.find_assignment(ASSIGNMENT).duedate
        out = {}
        for sub in gb.assignment_submissions(ASSIGNMENT):
            nb = sub.notebooks[0]
            out[sub.student_id] = {
                "raw": sub.score,
                "penalty": sub.late_submission_penalty,
                "timestamp": sub.timestamp,
                "duedate": duedate,
                "nb_penalty": nb.late_submission_penalty,
            }
        return out


@needs_sandbox
def test_the_gradebook_holds_the_same_penalty_and_nbgrader_export_agrees(graded):
    import datetime as dt

    root = graded["root"]
    assert (root / "gradebook.db").stat().st_mode & 0o777 == 0o600  # learners' grades: the instructor's alone
    rows = gradebook_rows(root)
    assert set(rows) == set(CLASS)
    for student, (_, _, raw, penalty, _) in CLASS.items():
        assert rows[student]["raw"] == raw and rows[student]["penalty"] == penalty, student
        assert rows[student]["duedate"] == dt.datetime(2026, 3, 1, 22, 59)  # naive UTC, as nbgrader
    assert rows["two_days"]["timestamp"] == dt.datetime(2026, 3, 3, 12, 0)
    assert rows["on_time"]["nb_penalty"] is None  # as nbgrader's AssignLatePenalties
    from nbgrader_tools.scratch_course import run_nbgrader_batch

    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    run_nbgrader_batch(
        [["export", f"--db=sqlite:///{root / 'gradebook.db'}", f"--to={root / 'nbgrader.csv'}"]], cwd=root
    )
    exported = {r["student_id"]: r for r in csv.DictReader(io.StringIO((root / "nbgrader.csv").read_text()))}
    for student, row in graded["rows"].items():
        assert float(exported[student]["score"]) == float(row["score"]), student
        assert float(exported[student]["late_submission_penalty"]) == float(row["late_penalty"]), student


def grade_again(graded: dict, policy: dict, folder: Path | None = None, log=quiet):
    """The class graded again (nothing regraded: the files are unchanged) from ``folder`` (default: every
    submission) under ``policy``; the item analysis is left as graded (repricing changes no cell's score)."""
    root = graded["root"]
    return grade_class(
        REPO,
        ASSIGNMENT,
        folder or root / "submitted",
        out=root,
        workers=2,
        settings=graded["settings"],
        progress=False,
        log=log,
        late_policy=late.make_policy(ASSIGNMENT, policy),
        analyse=False,
    )


@needs_sandbox
def test_moving_the_deadline_reprices_without_regrading(graded):
    root = graded["root"]
    moved = dict(POLICY, deadline="2026-03-31 23:59")
    again = grade_again(graded, moved)
    assert (again.reused, again.graded) == (len(CLASS), 0)
    rows = {
        r["student_id"]: r for r in csv.DictReader(io.StringIO((graded["reports"] / "student_scores.csv").read_text()))
    }
    assert {s: float(r["late_penalty"]) for s, r in rows.items()} == {s: 0.0 for s in CLASS}
    assert all(r["penalty"] == 0 for r in gradebook_rows(root).values())
    page = (root / "feedback" / "two_days" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "Score: 10 / 10" in page and "late penalty" not in page
    # and back, so that the other tests of this module see the first policy whatever their order
    grade_again(graded, POLICY)
    assert gradebook_rows(root)["two_days"]["penalty"] == 2


@needs_sandbox
def test_a_later_run_without_the_late_options_says_it_drops_the_penalties(graded):
    root, said = graded["root"], []
    # The options forgotten: the gradebook still has the deadline, no penalty is set.
    grade_again(graded, {}, log=said.append)
    charged = sorted(s for s, (*_, penalty, _status) in CLASS.items() if penalty)
    warnings = [m for m in said if "WARNING" in m]
    assert len(warnings) == 1 and all(s in warnings[0] for s in charged), said
    assert gradebook_rows(root)["two_days"]["penalty"] == 0
    said.clear()
    grade_again(graded, POLICY, log=said.append)  # and back, for the other tests of this module
    assert gradebook_rows(root)["two_days"]["penalty"] == 2
    assert not [m for m in said if "WARNING" in m]


def grant(root: Path, student: str, days: int) -> None:
    """nbgrader's own API for one learner's extension (``days=0`` removes it), as the instructors' guide shows."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="sdpa-course") as gb:
        gb.grant_extension(ASSIGNMENT, student, days=days)


def read_rows(reports: Path, name: str) -> dict[str, list[str]]:
    lines = list(csv.reader(io.StringIO((reports / name).read_text())))
    return {",".join(r): r for r in lines}


@needs_sandbox
def test_one_learners_extension_reprices_that_learner_alone(graded):
    """two_days handed in at 2026-03-03 12:00 UTC; with nbgrader's 2-day extension the deadline is
    2026-03-03 22:59 UTC: on time. Graded from a folder that holds only that learner, the others' rows stay."""
    root, reports = graded["root"], graded["reports"]
    before = {name: read_rows(reports, name) for name in ("student_scores.csv", "moodle_import.csv")}
    alone = root / "alone"
    shutil.copytree(root / "submitted" / "two_days", alone / "two_days")
    grant(root, "two_days", days=2)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", course_id="sdpa-course") as gb:
        gb.update_or_create_student("two_days", first_name="Ada", last_name="Lovelace")
    try:
        again = grade_again(graded, POLICY, alone)
        assert (again.reused, again.graded) == (len(CLASS), 0)  # re-priced only
        rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO((reports / "student_scores.csv").read_text()))}
        assert set(rows) == set(CLASS)
        assert (rows["two_days"]["late_penalty"], rows["two_days"]["score"], rows["two_days"]["late"]) == (
            "0",
            "10",
            "on time",
        )
        assert rows["two_days"]["name"] == "Ada Lovelace"  # the name the gradebook holds
        for name, old in before.items():  # every other row exactly as the full run wrote it
            now = read_rows(reports, name)
            assert {k for k in old if "two_days" not in k} == {k for k in now if "two_days" not in k}, name
        assert json.loads((reports / "summary.json").read_text())["extensions"] == {"two_days": 2 * 86400}
        assert not gradebook_rows(root)["two_days"]["penalty"] and gradebook_rows(root)["capped"]["penalty"] == 3
        page = (root / "feedback" / "two_days" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
        assert "Score: 10 / 10" in page and "late penalty" not in page
        assert "2026-03-03 23:59" in page  # the extended deadline, in the policy's zone (Berlin)
    finally:
        grant(root, "two_days", days=0)
        grade_again(graded, POLICY)
    assert gradebook_rows(root)["two_days"]["penalty"] == 2


@needs_sandbox
def test_a_learner_absent_from_the_folder_is_repriced_from_the_time_saved(graded):
    """Graded from a folder holding only on_time, with the deadline moved to the end of March: capped (kept
    from the full run, 19 days late before) is on time now, in the scores and on its page; nothing regraded."""
    root, reports = graded["root"], graded["reports"]
    alone = root / "alone_on_time"
    shutil.copytree(root / "submitted" / "on_time", alone / "on_time")

    def run(folder: Path, policy: dict) -> object:
        return grade_again(graded, policy, folder)

    try:
        again = run(alone, dict(POLICY, deadline="2026-03-31 23:59"))
        assert (again.reused, again.graded) == (len(CLASS), 0)
        rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO((reports / "student_scores.csv").read_text()))}
        assert (rows["capped"]["late_penalty"], rows["capped"]["late"]) == ("0", "on time")
        assert not gradebook_rows(root)["capped"]["penalty"]
        page = (root / "feedback" / "capped" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
        assert "Score: 10 / 10" in page and "late penalty" not in page
    finally:
        run(root / "submitted", POLICY)
    assert gradebook_rows(root)["capped"]["penalty"] == 3


@needs_sandbox
def test_item_analysis_matches_the_fixtures_known_scores(graded, capsys):
    """Every fixture but the blank release earns full marks on every cell; the blank earns none."""
    reports = graded["reports"]
    analysis = json.loads((reports / "item_analysis.json").read_text())
    fixtures = [fixture for fixture, *_ in CLASS.values()]
    n, blanks = len(fixtures), fixtures.count("blank")
    points = {"softmax_basic": 2, "softmax_large": 2, "softmax_masked": 2, "softmax_hidden": 4}
    assert [c["cell"] for c in analysis["cells"]] == list(points)
    for item in analysis["cells"]:
        assert item["students"] == n and item["points"] == points[item["cell"]]
        assert item["full"] == n - blanks and item["zero"] == blanks and item["partial"] == 0
        assert item["pass_rate"] == pytest.approx((n - blanks) / n)
        assert item["mean"] == pytest.approx(points[item["cell"]] * (n - blanks) / n)
        assert sum(m["count"] for m in item["messages"]) == blanks
        assert "NotImplementedError" in item["messages"][0]["example"]
    page = (reports / "item_analysis.html").read_text()
    for i, cell in enumerate(points):
        png = reports / "item_analysis" / f"item_{i + 1:02d}_{cell}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        alt = (
            f"Histogram of the scores on {cell} ({points[cell]} points) of {n} submissions: "
            f"{n - blanks} with full marks, 0 with part of the points, {blanks} with none"
        )
        assert f'src="item_analysis/{png.name}" alt="{alt}' in page
    # on its own, from the gradebook, with the same numbers
    before = (reports / "item_analysis.json").read_text()
    (reports / "item_analysis.json").unlink()
    assert cli.main([ASSIGNMENT, "--analyse-only", "--course", str(REPO), "--out", str(graded["root"])]) == 0
    out = capsys.readouterr().out
    assert json.loads((reports / "item_analysis.json").read_text()) == json.loads(before)
    hidden = next(cells for cells in map(str.split, out.splitlines()) if cells[:1] == ["softmax_hidden"])
    # points, pass rate, full, partial, zero, mean
    assert hidden[1:3] == ["4", f"{round(100 * (n - blanks) / n)}%"], hidden
    assert [float(x) for x in hidden[3:]] == [n - blanks, 0, blanks, pytest.approx(4 * (n - blanks) / n, abs=0.005)]


def test_analyse_only_without_a_gradebook_says_so(tmp_path, capsys):
    assert cli.main([ASSIGNMENT, "--analyse-only", "--course", str(REPO), "--out", str(tmp_path)]) == 2
    assert "no gradebook at" in capsys.readouterr().err
    with pytest.raises(item_analysis.AnalysisError, match="no assignment 'hw9'"):
        from classgrader.books import gradebook

        item_analysis.write(gradebook.sqlite_url(tmp_path / "gb.db"), "sdpa-course", "hw9", tmp_path)
