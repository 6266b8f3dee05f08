"""The LMS grade import files (classgrader.books.lms_export) against the column rules of Canvas and Moodle.

Canvas's gradebook import reads ``Student,ID,SIS User ID,SIS Login ID,Section``
and then one column per assignment, one row per student; Moodle's CSV grade
import maps one identifier column (``Email address`` or ``ID number``) to its
users and each other column to a grade item. The results here are written by
hand (scores, penalties, a student with no submission), and the expected cells
are worked out from them, not read from the code.
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


def test_canvas_file_has_canvas_columns_and_one_row_per_roster_student(mapping):
    table = rows(lms_export.canvas_csv(CLASS, TITLE, mapping))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", TITLE]
    assert table[1:] == [
        ["Lovelace, Ada", "1001", "S-1", "ada.l", "Section A", "10"],
        ["Babbage, Bob", "1002", "S-2", "bob.b", "Section A", "5.5"],  # the final score, after the penalty
        ["Young, Cyd", "1003", "S-3", "cyd.y", "Section B", ""],  # no submission: no grade, not 0
        ["Eve, Dee", "1004", "S-4", "dee.e", "Section B", "4"],
    ]


def test_missing_students_get_zero_only_when_asked(mapping):
    canvas = rows(lms_export.canvas_csv(CLASS, TITLE, mapping, missing_as_zero=True))
    moodle = rows(lms_export.moodle_csv(CLASS, TITLE, mapping, missing_as_zero=True))
    assert [r[-1] for r in canvas[1:]] == ["10", "5.5", "0", "4"]
    assert [r[-1] for r in moodle[1:]] == ["10", "5.5", "0", "4"]


def test_moodle_file_has_an_identifier_column_then_the_assignment(mapping):
    table = rows(lms_export.moodle_csv(CLASS, TITLE, mapping))
    assert table == [
        ["Email address", TITLE],
        ["ada@example.org", "10"],
        ["bob@example.org", "5.5"],
        ["cyd@example.org", ""],
        ["dee@example.org", "4"],
    ]


def test_without_emails_moodle_uses_id_numbers(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("student_id,id_number\nada,A1\nbob,B2\n")
    table = rows(lms_export.moodle_csv(CLASS, TITLE, lms_export.read_mapping(path)))
    # cyd and dee are not in the mapping: their own id stands in the ID number column
    assert table == [["ID number", TITLE], ["A1", "10"], ["B2", "5.5"], ["cyd", ""], ["dee", "4"]]


def test_without_a_mapping_a_canvas_export_id_is_the_canvas_user_id():
    from_canvas = [result("222", "graded", 6.0, layout="canvas"), result("ada", "graded", 10.0)]
    table = rows(lms_export.canvas_csv(from_canvas, TITLE))
    assert table[1] == ["", "222", "", "", "", "6"]
    assert table[2] == ["", "", "", "", "", "10"]
    assert lms_export.unmatched(from_canvas, None) == ["ada"]


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
