"""Points are written once, in ``sdpa_course/grading/hwN.py`` (``points=`` of each check).

A source notebook in ``solutions/`` repeats them in three places, all written
from the checks by :func:`sync` (``./course release`` runs it before nbgrader
makes the releases):

- each test cell's nbgrader metadata ``points`` (what ``nbgrader autograde``
  counts);
- a heading that ends in ``(N points)``: N is the sum of the test cells below
  it, up to the next heading of the same or a higher level;
- a number in the prose followed by a marker that names its checks, e.g.
  ``(1 + 1 points)<!-- points: attention_dv, attention_dv_hidden -->``: one
  number per check, or one number for their sum. The marker is an HTML
  comment, so it shows nowhere.

Any other "N points" in a statement is refused (:class:`PointsError` names the
file, the cell, the number written and the checks' value), so that no number
on a page can drift away from the grader.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import nbformat

from sdpa_course.grading import checks_for

from .cells import nbgrader_meta

__all__ = ["PointsError", "apply", "check", "problems", "sync"]

NUMBER = r"\d+(?:\.\d+)?"
HEADING = re.compile(rf"^(?P<hashes>#{{1,6}}) (?P<head>.*\()(?P<n>{NUMBER}) (?P<word>points?)\)\s*$")
MARKED = re.compile(
    rf"(?P<nums>{NUMBER}(?: \+ {NUMBER})*) (?P<word>points?)(?P<close>\)?)<!-- points: (?P<ids>[\w, ]+?) -->"
)
ANY_HEADING = re.compile(r"^(#{1,6}) ")
LOOSE = re.compile(rf"\b{NUMBER} points?\b")
#: The generated cells (start_here, grading_rules) name no numbers of points.
SKIPPED_IDS = ("start_here", "grading_rules")


class PointsError(ValueError):
    """A number of points in a source notebook that cannot be written from the checks."""


def _fmt(value: float) -> str:
    return f"{value:g}"


def _word(total: float) -> str:
    return "point" if total == 1 else "points"


def _section_points(nb: nbformat.NotebookNode, points: dict[str, float]) -> Iterator[tuple[int, int, float]]:
    """(cell index, line index, points below it) for every heading ending in ``(N points)``."""
    open_headings: list[tuple[int, int, int, float]] = []  # (level, cell, line, sum)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for line_no, line in enumerate(cell.source.splitlines()):
                heading = ANY_HEADING.match(line)
                if heading is None:
                    continue
                level = len(heading.group(1))
                while open_headings and open_headings[-1][0] >= level:
                    _, c, ln, total = open_headings.pop()
                    yield c, ln, total
                if HEADING.match(line):
                    open_headings.append((level, index, line_no, 0.0))
        grade_id = nbgrader_meta(cell).get("grade_id")
        if cell.cell_type == "code" and nbgrader_meta(cell).get("grade") and grade_id in points:
            open_headings = [(lv, c, ln, total + points[grade_id]) for lv, c, ln, total in open_headings]
    for _, c, ln, total in open_headings:
        yield c, ln, total


def _marked(match: re.Match, points: dict[str, float], where: str) -> str:
    ids = [part.strip() for part in match.group("ids").split(",") if part.strip()]
    unknown = [i for i in ids if i not in points]
    if unknown:
        raise PointsError(f"{where}: the marker <!-- points: ... --> names {unknown[0]!r}, which is no check")
    written = match.group("nums").split(" + ")
    values = [points[i] for i in ids]
    if len(written) == 1:
        text = _fmt(sum(values))
        total = sum(values)
    elif len(written) == len(ids):
        text = " + ".join(_fmt(v) for v in values)
        total = sum(values)
    else:
        raise PointsError(
            f"{where}: {match.group('nums')!r} has {len(written)} numbers for {len(ids)} checks "
            f"({', '.join(ids)}); write one number (their sum) or one per check"
        )
    word = _word(total) if len(written) == 1 else "points"
    return f"{text} {word}{match.group('close')}<!-- points: {match.group('ids')} -->"


def apply(nb: nbformat.NotebookNode, assignment: str, where: str, *, metadata: bool = True) -> list[str]:
    """Write the checks' points into ``nb`` (in place); return what changed, as sentences.

    ``where`` names the notebook in messages; ``metadata=False`` leaves the
    test cells' metadata alone (:func:`nbgrader_tools.authoring.problems`
    reports it in its own words). Raises :class:`PointsError` for a number of
    points in a statement that no rule ties to the checks.
    """
    points = {check.id: float(check.points) for check in checks_for(assignment)}
    changes: list[str] = []
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        grade_id = meta.get("grade_id")
        if metadata and cell.cell_type == "code" and meta.get("grade") and grade_id in points:
            old = meta.get("points")
            if old is None or float(old) != points[grade_id]:
                changes.append(f"{where}: test cell {grade_id!r}: {old} -> {_fmt(points[grade_id])} points")
                meta["points"] = points[grade_id] if points[grade_id] % 1 else int(points[grade_id])
    headings = {(c, ln): total for c, ln, total in _section_points(nb, points)}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown" or nbgrader_meta(cell).get("grade_id") in SKIPPED_IDS:
            continue
        lines = cell.source.splitlines()
        for line_no, line in enumerate(lines):
            here = f"{where}, cell {index}"
            heading = HEADING.match(line)
            if heading and (index, line_no) in headings:
                total = headings[(index, line_no)]
                line = f"{heading.group('hashes')} {heading.group('head')}{_fmt(total)} {_word(total)})"
            else:
                line = MARKED.sub(partial(_marked, points=points, where=here), line)
                loose = LOOSE.search(MARKED.sub("", line))
                if loose:
                    raise PointsError(
                        f"{here}: {loose.group(0)!r} is written by hand: points live in sdpa_course/grading/ "
                        f"({', '.join(f'{k} = {_fmt(v)}' for k, v in points.items())}); end a heading with "
                        "'(N points)' or follow the number with <!-- points: CHECK_ID, ... --> so that "
                        "./course release writes it"
                    )
            if line != lines[line_no]:
                changes.append(f"{here}: {lines[line_no].strip()!r} -> {line.strip()!r}")
                lines[line_no] = line
        new = "\n".join(lines)
        if new != cell.source.rstrip("\n") and new != cell.source:
            cell.source = new
    return changes


def problems(nb: nbformat.NotebookNode, assignment: str, where: str = "the notebook") -> list[str]:
    """What :func:`apply` would change or refuse in the headings and prose of a copy of ``nb``
    (empty when current); the test cells' metadata is :func:`nbgrader_tools.authoring.problems`'s."""
    import copy

    try:
        changes = apply(copy.deepcopy(nb), assignment, where, metadata=False)
    except PointsError as exc:
        return [str(exc)]
    return [f"{change} (stale: run ./course release)" for change in changes]


def check(path: Path, assignment: str, where: str) -> None:
    """Raise :class:`PointsError` when :func:`sync` would refuse the file (nothing is written)."""
    apply(nbformat.read(str(path), as_version=4), assignment, where)


def sync(path: Path, assignment: str, where: str) -> list[str]:
    """Write the checks' points into a source notebook file; return what changed."""
    nb = nbformat.read(str(path), as_version=4)
    changes = apply(nb, assignment, where)
    if changes:
        nbformat.write(nb, str(path))
    return changes
