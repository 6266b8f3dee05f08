"""Grade import files for learning-management systems: Canvas and Moodle.

Both hold the **final** score (after the late penalty, as ``student_scores.csv``'s
``score``), one row per student of the roster (every student graded or
reported missing). A student with no submission gets an empty cell, which
both LMSs read as "no grade" (nothing is overwritten), unless the course
asks for 0 (``c.LmsExport.missing_as_zero = True`` or ``--missing-as-zero``).

- **Canvas** (``canvas_import.csv``), the columns of Canvas's own gradebook
  import: ``Student,ID,SIS User ID,SIS Login ID,Section,<assignment title>``.
  Canvas matches a row by ``ID`` (its user id) or the SIS ids; the assignment
  column's title creates the assignment, or names an existing one.
- **Moodle** (``moodle_import.csv``): an identifier column, ``Email address``
  when the roster mapping gives every student's e-mail, else ``ID number``,
  then one column per assignment. In Moodle's *Import, CSV file*, map that
  column to the user field of the same name and the assignment column to the
  grade item.

The ids come from a **roster mapping**, a CSV the instructor keeps
(``--lms-roster FILE`` or ``c.LmsExport.roster``), with a header row and the
columns ``student_id`` (the id the grader uses) and any of ``canvas_id``,
``name`` (as Canvas shows it: ``Last, First``), ``sis_user_id``,
``sis_login_id``, ``section``, ``email``, ``id_number``. Without it, a student
id that came from a Canvas export is Canvas's user id and fills ``ID``; a
Moodle row names the student by the grader's id, as ``ID number``.
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


def _score_cell(result: Result, missing_as_zero: bool) -> str:
    if result["status"] == "missing":
        return "0" if missing_as_zero else ""
    return f"{late.final_score(result):g}"


def _write(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def canvas_csv(
    results: list[Result], title: str, mapping: dict[str, Person] | None = None, *, missing_as_zero: bool = False
) -> str:
    """Canvas's gradebook import file for one assignment, one row per student."""
    mapping = mapping or {}
    rows = [[*CANVAS_FIXED, title]]
    for r in sorted(results, key=lambda r: r["student"]):
        p = mapping.get(r["student"]) or Person(r["student"])
        canvas_id = p.canvas_id or (r["student"] if r.get("layout") == "canvas" else "")
        name = p.name or r.get("display_name") or ""
        rows.append([name, canvas_id, p.sis_user_id, p.sis_login_id, p.section, _score_cell(r, missing_as_zero)])
    return _write(rows)


def moodle_csv(
    results: list[Result], title: str, mapping: dict[str, Person] | None = None, *, missing_as_zero: bool = False
) -> str:
    """Moodle's grade import file for one assignment: the identifier column, then the assignment's."""
    mapping = mapping or {}
    ordered = sorted(results, key=lambda r: r["student"])
    people = [mapping.get(r["student"]) or Person(r["student"]) for r in ordered]
    by_email = bool(people) and all(p.email for p in people)
    rows = [["Email address" if by_email else "ID number", title]]
    for r, p in zip(ordered, people, strict=True):
        ident = p.email if by_email else (p.id_number or p.student_id)
        rows.append([ident, _score_cell(r, missing_as_zero)])
    return _write(rows)


def unmatched(results: list[Result], mapping: dict[str, Person] | None) -> list[str]:
    """Students whose Canvas row names no Canvas id and no SIS id: Canvas cannot match them."""
    out = []
    for r in results:
        p = (mapping or {}).get(r["student"]) or Person(r["student"])
        if not (p.canvas_id or p.sis_user_id or p.sis_login_id or r.get("layout") == "canvas"):
            out.append(r["student"])
    return sorted(out)
