"""The LMS grade import files (classgrader.books.lms_export) against the documented rules of Canvas and Moodle.

The importers' rules, quoted beside the tests that hold them:

- Moodle, *Grade import* (docs.moodle.org/311/en/Grade_import): "By default
  'Map from' is set to First Name, and 'Map to' to userid. Change both
  dropdowns to: 'Email Address' to 'useremail', or to 'Id Number' to
  'useridnumber'". Its importer (moodle/moodle
  grade/import/csv/classes/load_data.php, ``check_user_exists``): when no
  user has the row's value, "if (!$user || $usercheckproblem) { ...
  $this->cleanup_import(get_string('usermappingerror', ...))": one row
  naming an unknown user ends the whole import; and a row's empty grade is
  imported as "no grade", replacing the grade Moodle holds.
- Canvas, its gradebook export (the format its import reads back): the
  columns ``Student, ID, SIS User ID, SIS Login ID, Section``, then
  "All individual assignments in Canvas grades csv contain a name and a
  unique identifier ID number ... of the form 'Quiz 1 (87568490)'"
  (nemogb-dev.github.io/nemogb-r/articles/detailed-canvas-export-info.html),
  and a "Points Possible" row under the header; "New assignment columns in the
  Gradebook generate new assignments" (teaching.resources.osu.edu, Import a
  CSV file to Carmen Grades); a row is matched by "Student Name ... OR
  Student ID OR Student SIS User ID" (same page).

The results here are written by hand (scores, penalties, a student with no
submission), and the expected cells are worked out from them, not read from
the code.
"""

from __future__ import annotations

import csv
import io

import pytest

from classgrader import settings
from classgrader.books import class_reports, lms_export
from classgrader.records import Result, new_result

TITLE = "Homework 2: a stable softmax"


def result(student: str, status: str, score: float, *, penalty: float = 0.0, layout: str = "nbgrader") -> Result:
    r = new_result(
        student=student,
        assignment="hw2_stable_softmax",
        notebook="hw2_stable_softmax",
        display_name="",
        timestamp=None,
        submitted_file="",
        layout=layout,
        ignored_files=[],
        max_score=10.0,
        key="k",
        status=status,
    )
    r["score"] = score
    if penalty:
        r["late"] = {
            "submitted_at": "2026-03-03T12:00:00+00:00",
            "source": "timestamp.txt",
            "deadline": "2026-03-01T22:59:00+00:00",
            "seconds_late": 133260.0,
            "periods": 2,
            "penalty": penalty,
            "raw_score": score,
            "final_score": score - penalty,
            "status": "late",
            "note": "late",
        }
    return r


CLASS = [
    result("ada", "graded", 10.0),
    result("bob", "graded", 7.5, penalty=2.0),  # late: 7.5 - 2 = 5.5 goes to the LMS
    result("cyd", "missing", 0.0),  # on the roster, sent nothing
    result("dee", "timed_out", 4.0),
]

MAPPING = """student_id,canvas_id,name,sis_user_id,sis_login_id,section,email,id_number
ada,1001,"Lovelace, Ada",S-1,ada.l,Section A,ada@example.org,A1
bob,1002,"Babbage, Bob",S-2,bob.b,Section A,bob@example.org,B2
cyd,1003,"Young, Cyd",S-3,cyd.y,Section B,cyd@example.org,C3
dee,1004,"Eve, Dee",S-4,dee.e,Section B,dee@example.org,D4
"""


@pytest.fixture
def mapping(tmp_path) -> dict[str, lms_export.Person]:
    path = tmp_path / "lms_roster.csv"
    path.write_text(MAPPING)
    return lms_export.read_mapping(path)


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_canvas_file_has_canvas_columns_points_possible_and_the_students_it_can_match(mapping):
    # Canvas: the export's columns, its "Points Possible" row, a new or existing assignment by its column title.
    table = rows(lms_export.canvas_csv(CLASS, TITLE, mapping) or "")
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", TITLE]
    assert table[1] == ["Points Possible", "", "", "", "", "10"]
    assert table[2:] == [
        ["Lovelace, Ada", "1001", "S-1", "ada.l", "Section A", "10"],
        ["Babbage, Bob", "1002", "S-2", "bob.b", "Section A", "5.5"],  # the final score, after the penalty
        ["Eve, Dee", "1004", "S-4", "dee.e", "Section B", "4"],  # cyd sent nothing: left out, nothing cleared
    ]
    titled = rows(lms_export.canvas_csv(CLASS, "Homework 2 (87568490)", mapping) or "")
    assert titled[0][-1] == "Homework 2 (87568490)"  # the export's "Name (id)": matches that assignment


def test_missing_students_get_zero_only_when_asked(mapping):
    # Moodle: an empty grade is imported as "no grade"; so a missing student is in the file only as 0.
    canvas = rows(lms_export.canvas_csv(CLASS, TITLE, mapping, missing_as_zero=True) or "")
    moodle = rows(lms_export.moodle_csv(CLASS, TITLE, mapping, missing_as_zero=True))
    assert [r[-1] for r in canvas[2:]] == ["10", "5.5", "0", "4"]
    assert [r[-1] for r in moodle[1:]] == ["10", "5.5", "0", "4"]
    assert [r[-1] for r in rows(lms_export.moodle_csv(CLASS, TITLE, mapping))[1:]] == ["10", "5.5", "4"]


def test_moodle_file_has_an_identifier_column_then_the_assignment(mapping):
    # Moodle: map "Email Address" to useremail.
    table = rows(lms_export.moodle_csv(CLASS, TITLE, mapping))
    assert table == [
        ["Email address", TITLE],
        ["ada@example.org", "10"],
        ["bob@example.org", "5.5"],
        ["dee@example.org", "4"],
    ]


def test_a_student_the_mapping_cannot_place_is_left_out_and_named(tmp_path):
    # Moodle: one row whose user is not found ends the whole import (usermappingerror), so such a row is left out.
    path = tmp_path / "roster.csv"
    path.write_text("student_id,id_number\nada,A1\nbob,B2\n")
    mapping = lms_export.read_mapping(path)
    table = rows(lms_export.moodle_csv(CLASS, TITLE, mapping))
    assert table == [["ID number", TITLE], ["A1", "10"], ["B2", "5.5"]]  # "Id Number" to useridnumber
    assert lms_export.left_out(CLASS, mapping) == {"canvas": ["ada", "bob", "dee"], "moodle": ["dee"]}


def test_without_a_mapping_moodle_names_usernames_and_canvas_only_canvas_ids(tmp_path):
    table = rows(lms_export.moodle_csv(CLASS, TITLE))
    assert table == [["Username", TITLE], ["ada", "10"], ["bob", "5.5"], ["dee", "4"]]  # the column its header names
    from_canvas = [result("222", "graded", 6.0, layout="canvas"), result("ada", "graded", 10.0)]
    assert rows(lms_export.canvas_csv(from_canvas, TITLE) or "")[2:] == [["", "222", "", "", "", "6"]]
    assert lms_export.unmatched(from_canvas, None) == ["ada"]
    # Canvas matches a row by its ID or SIS id: with none, no file, and the summary says why.
    assert lms_export.canvas_csv(CLASS, TITLE) is None
    s = class_reports.write_all(CLASS, tmp_path, assignment="hw2_stable_softmax", seconds=1.0, workers=1)
    assert not (tmp_path / "canvas_import.csv").exists() and s["canvas_written"] is False
    assert "canvas_import.csv not written" in class_reports.summary_text(s)


@pytest.mark.parametrize(
    "text, message",
    [
        ("id,canvas_id\nada,1\n", "must name the columns, starting with student_id"),
        ("student_id,canvas\nada,1\n", "unknown column(s) canvas"),
        ("student_id,canvas_id\nada,1\nada,2\n", "line 3: student_id 'ada' appears twice"),
    ],
)
def test_a_bad_mapping_is_refused_with_a_reason(tmp_path, text, message):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    with pytest.raises(lms_export.MappingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lms_export.read_mapping(path)


def test_the_reports_folder_gets_both_files_beside_the_scores(tmp_path, mapping):
    out = tmp_path / "reports"
    s = class_reports.write_all(
        CLASS,
        out,
        assignment="hw2_stable_softmax",
        seconds=1.0,
        workers=1,
        lms=lms_export.LmsOptions(mapping=mapping, title=TITLE),
    )
    names = sorted(p.name for p in out.iterdir())
    assert {"student_scores.csv", "canvas_import.csv", "moodle_import.csv"} <= set(names)
    assert "grades.csv" not in names
    assert rows((out / "canvas_import.csv").read_text())[0][-1] == TITLE
    assert s["canvas_unmatched"] == []


def test_course_settings_name_the_mapping_and_the_title(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    (course / "lms_roster.csv").write_text(MAPPING)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.LmsExport.roster = 'lms_roster.csv'\n"
        "c.LmsExport.missing_as_zero = True\n"
        "c.LmsExport.titles = {'hw2_stable_softmax': 'Homework 2'}\n"
    )
    opts = lms_export.options_of(settings.read(course).lms, course, "hw2_stable_softmax")
    assert opts.title == "Homework 2" and opts.missing_as_zero is True
    assert opts.mapping is not None and opts.mapping["cyd"].canvas_id == "1003"
    assert lms_export.options_of(settings.read(course).lms, course, "hw9").title is None


def test_the_class_histograms_title_stays_inside_the_figure(tmp_path):
    """A long assignment name with missing students: the title wraps rather than running off the image."""
    results = [*CLASS, result("eli", "missing", 0.0)]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    name = "hw10_transformer_block_with_a_much_longer_name_than_usual"
    fig = class_reports.histogram(results, tmp_path / "h.png", assignment=name)
    renderer = FigureCanvasAgg(fig).get_renderer()
    box, frame = fig.axes[0].title.get_window_extent(renderer), fig.bbox
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1, (box, frame)
