"""Grade import files for learning-management systems: Canvas and Moodle.

Both hold the **final** score (after the late penalty, as ``student_scores.csv``'s
``score``). A student with no submission is **left out** of both files, so an
import overwrites nobody's grade with "no grade"; with
``c.LmsExport.missing_as_zero = True`` (or ``--missing-as-zero``) they are in it
with 0. A student the roster mapping cannot place is left out too, and the
summary names them (:func:`left_out`): one row the LMS cannot match would stop
a Moodle import.

- **Canvas** (``canvas_import.csv``), the columns of Canvas's own gradebook
  export: ``Student,ID,SIS User ID,SIS Login ID,Section,<assignment>``, then a
  ``Points Possible`` row with the assignment's maximum, then one row per
  student that has a Canvas ``ID`` or an SIS id. The assignment column's
  title is the one Canvas's export gives an existing assignment,
  ``Name (id)``, when ``c.LmsExport.titles`` gives it so; a bare name matches
  an assignment of that exact name, or creates one. When no student can be
  matched (no roster mapping, and ids that are not Canvas's) the file is not
  written, and the summary says why.
- **Moodle** (``moodle_import.csv``): an identifier column, then one column for
  the assignment. The identifier is ``Email address`` when the roster mapping
  gives every placed student's e-mail, else ``ID number`` when it gives ID
  numbers, else (no mapping) ``Username``, filled with the grader's ids
  (nbgrader's, which on a hub are the accounts' names). In Moodle's *Import,
  CSV file*, map that column to the user field its header names and the
  assignment column to the grade item.

The ids come from a **roster mapping**, a CSV the instructor keeps
(``--lms-roster FILE`` or ``c.LmsExport.roster``), with a header row and the
columns ``student_id`` (the id the grader uses) and any of ``canvas_id``,
``name`` (as Canvas shows it: ``Last, First``), ``sis_user_id``,
``sis_login_id``, ``section``, ``email``, ``id_number``. Without it, a student
id that came from a Canvas export is Canvas's user id and fills ``ID``.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

from classgrader.after_deadline import late
from classgrader.records import Result
from classgrader.settings import LmsExport

CANVAS_FIXED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MAPPING_COLUMNS = ["student_id", "canvas_id", "name", "sis_user_id", "sis_login_id", "section", "email", "id_number"]


class MappingError(ValueError):
    """The roster mapping cannot be read; the message names the file, the line and what is wrong."""


@dataclasses.dataclass(frozen=True)
class Person:
    """What the LMSs know a student by (empty strings where the mapping says nothing)."""

    student_id: str
    canvas_id: str = ""
    name: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    email: str = ""
    id_number: str = ""


@dataclasses.dataclass
class LmsOptions:
    """How the LMS files are written: the roster mapping, the column's title, 0 or empty for the missing."""

    mapping: dict[str, Person] | None = None
    title: str | None = None  # the assignment column's title (default: the assignment's name)
    missing_as_zero: bool = False


def options_of(settings: LmsExport, course: Path, assignment: str) -> LmsOptions:
    """The LMS options of ``assignment`` from the course's ``LmsExport`` settings (declared in
    :mod:`classgrader.settings`): the roster mapping read (a relative path is in ``course``), the column's title."""
    path = Path(course) / settings.roster if settings.roster is not None else None
    return LmsOptions(
        mapping=read_mapping(path) if path is not None else None,
        title=settings.titles.get(assignment),
        missing_as_zero=settings.missing_as_zero,
    )


def read_mapping(path: Path) -> dict[str, Person]:
    """``{student_id: Person}`` from a roster mapping CSV (see the module docstring)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise MappingError(f"cannot read the LMS roster mapping {path}: {exc.strerror or exc}") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    if "student_id" not in header:
        raise MappingError(
            f"{path}: the first row must name the columns, starting with student_id "
            f"(known: {', '.join(MAPPING_COLUMNS)}); it is {','.join(header) or 'empty'}"
        )
    unknown = [h for h in header if h not in MAPPING_COLUMNS]
    if unknown:
        raise MappingError(f"{path}: unknown column(s) {', '.join(unknown)}; known: {', '.join(MAPPING_COLUMNS)}")
    people: dict[str, Person] = {}
    for line, row in enumerate(reader, start=2):
        values = {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
        sid = values.get("student_id", "")
        if not sid:
            continue
        if sid in people:
            raise MappingError(f"{path}, line {line}: student_id {sid!r} appears twice")
        people[sid] = Person(**{k: values.get(k, "") for k in MAPPING_COLUMNS})
    return people


def _score_cell(result: Result, missing_as_zero: bool) -> str | None:
    """The LMS cell: the final score; for a missing student 0 or None (the row is left out)."""
    if result["status"] == "missing":
        return "0" if missing_as_zero else None
    return f"{late.final_score(result):g}"


def _write(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _canvas_person(result: Result, mapping: dict[str, Person] | None) -> Person | None:
    """The student as Canvas knows them, or None when Canvas cannot match them (no Canvas id, no SIS id)."""
    p = (mapping or {}).get(result["student"]) or Person(result["student"])
    if not p.canvas_id and result.get("layout") == "canvas":
        p = dataclasses.replace(p, canvas_id=result["student"])
    return p if (p.canvas_id or p.sis_user_id or p.sis_login_id) else None


def canvas_csv(
    results: list[Result], title: str, mapping: dict[str, Person] | None = None, *, missing_as_zero: bool = False
) -> str | None:
    """Canvas's gradebook import file for one assignment; None when no student can be matched."""
    mx = max((float(r.get("max_score") or 0) for r in results), default=0.0)
    rows = [[*CANVAS_FIXED, title], ["Points Possible", "", "", "", "", f"{mx:g}"]]
    for r in sorted(results, key=lambda r: r["student"]):
        p, cell = _canvas_person(r, mapping), _score_cell(r, missing_as_zero)
        if p is None or cell is None:
            continue
        name = p.name or r.get("display_name") or ""
        rows.append([name, p.canvas_id, p.sis_user_id, p.sis_login_id, p.section, cell])
    return _write(rows) if len(rows) > 2 else None


def _moodle_column(results: list[Result], mapping: dict[str, Person] | None) -> tuple[str, dict[str, str]]:
    """The identifier column's header and ``{student: identifier}`` for the students it can place."""
    if mapping is None:
        return "Username", {r["student"]: r["student"] for r in results}
    people = [mapping[r["student"]] for r in results if r["student"] in mapping]
    if people and all(p.email for p in people):
        return "Email address", {p.student_id: p.email for p in people}
    return "ID number", {p.student_id: p.id_number for p in people if p.id_number}


def moodle_csv(
    results: list[Result], title: str, mapping: dict[str, Person] | None = None, *, missing_as_zero: bool = False
) -> str:
    """Moodle's grade import file for one assignment: the identifier column, then the assignment's."""
    header, ids = _moodle_column(results, mapping)
    rows = [[header, title]]
    for r in sorted(results, key=lambda r: r["student"]):
        cell = _score_cell(r, missing_as_zero)
        if cell is not None and r["student"] in ids:
            rows.append([ids[r["student"]], cell])
    return _write(rows)


def left_out(results: list[Result], mapping: dict[str, Person] | None) -> dict[str, list[str]]:
    """``{"canvas": [...], "moodle": [...]}``: students with a grade to import whom that file cannot place."""
    graded = [r for r in results if r["status"] != "missing"]
    _, ids = _moodle_column(graded, mapping)
    return {
        "canvas": sorted(r["student"] for r in graded if _canvas_person(r, mapping) is None),
        "moodle": sorted(r["student"] for r in graded if r["student"] not in ids),
    }


def unmatched(results: list[Result], mapping: dict[str, Person] | None) -> list[str]:
    """Students whose Canvas row names no Canvas id and no SIS id: Canvas cannot match them."""
    return sorted(r["student"] for r in results if _canvas_person(r, mapping) is None)
