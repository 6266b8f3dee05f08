"""Item analysis of one graded assignment: how the class did on each check.

For every graded cell (one check of :mod:`grading`, or a cell graded by hand)
of every notebook of the assignment, each under its notebook's name:

- **pass rate**: the share of submissions with full marks on that cell;
  also how many had part of the points and how many none, and the mean;
- **the most common messages** that the check gave to submissions *without*
  full marks (from ``reports/<assignment>/results/<student>.json``), numbers
  in them replaced by ``#`` so that "row 0 sums to 0.98" and "row 2 sums to
  0.97" count as one message;
- **a histogram of the cell's scores**, one PNG per cell, with alt text that
  states the same counts.

The scores come from nbgrader's gradebook (SQLite or PostgreSQL), so manual
grades entered there count: a cell's score is nbgrader's (the manual score if
set, else the automatic one). Only submissions in the gradebook count;
missing ones are not in it. A hand-graded cell counts the submissions
graded on it so far; the others are reported as not graded yet. The report is ``item_analysis.html`` (the table
and the histograms), ``item_analysis.json`` and ``item_analysis.csv`` in
``reports/<assignment>/``; ``./course grade`` writes it after grading and
``./course grade ASSIGNMENT --analyse-only`` on its own.
"""

from __future__ import annotations

import collections
import csv
import html
import io
import re
from pathlib import Path
from typing import Any

from classgrader.records import atomic_path, read_result, write_json_atomic, write_text_atomic

# Okabe & Ito's colour-blind-safe palette (as the class histogram).
BLUE = "#0072B2"
TOP_MESSAGES = 3
_WARNED = re.compile(r"\s*\[it warned:[^\]]*\]")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class AnalysisError(RuntimeError):
    """Nothing to analyse (no such assignment, nothing graded); the message says which."""


def normalise_message(message: str) -> str:
    """A message with its numbers replaced by ``#``, for counting alike messages together.

    The list of warnings a learner's function gave (``[it warned: ...]``) is
    left out too: the same mistake warns differently in different code.

    >>> normalise_message("row 0 sums to 0.999785, not 1 (case 3 of 12)")
    'row # sums to #, not # (case # of #)'
    >>> normalise_message("row 1 has NaN [it warned: RuntimeWarning: invalid value encountered in divide]")
    'row # has NaN'
    """
    text = _WARNED.sub("", " ".join((message or "").split()))
    return _NUMBER.sub("#", text)


def scores_from_gradebook(
    db_url: str, course_id: str, assignment: str, notebook: str | None = None
) -> tuple[dict[str, float], dict[str, dict[str, float]], dict[str, str]]:
    """(``{cell: points}``, ``{student: {cell: score}}``, ``{cell: notebook}``) for every notebook of an
    assignment (or the one named ``notebook``), notebooks in name order.

    A cell without a score (a hand-graded cell not graded yet in the formgrader) is left out of that
    student's scores until it has one.
    """
    from nbgrader import api

    from classgrader.books.gradebook import cell_scores, open_gradebook

    with open_gradebook(db_url, course_id) as gb:
        try:
            row = gb.find_assignment(assignment)
        except api.MissingEntry:
            raise AnalysisError(f"the gradebook has no assignment {assignment!r}: grade it first") from None
        notebooks = {nb.name: nb for nb in row.notebooks}
        if not notebooks:
            raise AnalysisError(f"the gradebook's assignment {assignment!r} has no notebook")
        if notebook is not None and notebook not in notebooks:
            raise AnalysisError(f"assignment {assignment!r} has no notebook {notebook!r}; it has {sorted(notebooks)}")
        names = [notebook] if notebook is not None else sorted(notebooks)
        points = {c.name: float(c.max_score) for name in names for c in notebooks[name].grade_cells}
        where = {c.name: name for name in names for c in notebooks[name].grade_cells}
        per_student: dict[str, dict[str, float]] = {}
        for name in names:
            for student, cells in cell_scores(gb, assignment, notebook=name).items():
                got = {cell: float(score) for cell, score in cells.items() if cell in points and score is not None}
                per_student.setdefault(student, {}).update(got)
    return points, per_student, where


def release_order(course: Path, assignment: str) -> list[str]:
    """The graded cells' ids in the order of the release notebooks (``exercises/<assignment>/``, by name)."""
    import nbformat

    from nbgrader_tools.cells import nbgrader_meta

    order = []
    for path in sorted((course / "exercises" / assignment).glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = nbgrader_meta(cell)
            if meta.get("grade") and meta.get("grade_id"):
                order.append(meta["grade_id"])
    return order


def messages_from_results(results_dir: Path) -> dict[str, dict[str, str]]:
    """``{student: {cell: message}}`` from the class grader's result files."""
    messages: dict[str, dict[str, str]] = {}
    for path in sorted(results_dir.glob("*.json")) if results_dir.is_dir() else []:
        data = read_result(path)
        cells = data.get("cells") if data is not None else None
        if data is None or not isinstance(cells, dict):
            continue
        messages[str(data.get("student", path.stem))] = {
            gid: str(c.get("message") or "") for gid, c in cells.items() if isinstance(c, dict)
        }
    return messages


def analyse(
    points: dict[str, float],
    scores: dict[str, dict[str, float]],
    messages: dict[str, dict[str, str]],
    order: list[str] | None = None,
    *,
    assignment: str = "",
    notebooks: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The item analysis as plain data (see the module docstring); a pure function.

    ``notebooks`` names each cell's notebook; a cell counts the submissions that have a score on it.
    """
    cells = [c for c in (order or []) if c in points] + [c for c in points if c not in (order or [])]
    students = sorted(scores)
    items = []
    for cell in cells:
        pts = points[cell]
        scored = [s for s in students if cell in scores[s]]
        got = [scores[s][cell] for s in scored]
        full = sum(1 for v in got if v >= pts)
        zero = sum(1 for v in got if v <= 0 and pts > 0)
        counter: collections.Counter[str] = collections.Counter()
        example: dict[str, str] = {}
        for s, v in zip(scored, got):
            if v >= pts:
                continue
            msg = messages.get(s, {}).get(cell)
            if not msg:
                continue
            key = normalise_message(msg)
            counter[key] += 1
            example.setdefault(key, msg)
        items.append(
            {
                "cell": cell,
                "notebook": (notebooks or {}).get(cell, ""),
                "points": pts,
                "students": len(got),
                "full": full,
                "partial": len(got) - full - zero,
                "zero": zero,
                "pass_rate": (full / len(got)) if got else None,
                "mean": (sum(got) / len(got)) if got else None,
                "not_graded_yet": len(students) - len(scored),
                "scores": got,
                "messages": [
                    {"message": key, "count": n, "example": example[key]}
                    for key, n in counter.most_common(TOP_MESSAGES)
                ],
            }
        )
    return {"assignment": assignment, "students": len(students), "cells": items}


def table_text(analysis: dict[str, Any]) -> str:
    """The analysis as a plain-text table (printed by ``--analyse-only``)."""
    lines = [
        f"{analysis['assignment']}: item analysis of {analysis['students']} graded submissions",
        f"  {'graded cell':<28}{'points':>7}{'pass rate':>11}{'full':>6}{'partial':>9}{'zero':>6}{'mean':>7}",
    ]
    shown = None
    for it in analysis["cells"]:
        if it.get("notebook") and it["notebook"] != shown:
            shown = it["notebook"]
            lines.append(f"  notebook {shown}:")
        rate = "-" if it["pass_rate"] is None else f"{100 * it['pass_rate']:.0f}%"
        mean = "-" if it["mean"] is None else f"{it['mean']:.2f}"
        lines.append(
            f"  {it['cell']:<28}{it['points']:>7g}{rate:>11}{it['full']:>6}{it['partial']:>9}{it['zero']:>6}{mean:>7}"
        )
        for m in it["messages"]:
            lines.append(f"      {m['count']:>3} x  {m['example'][:110]}")
    return "\n".join(lines)


def alt_text(item: dict[str, Any]) -> str:
    """What a cell's histogram shows, in words (the image's alt text)."""
    n = item["students"]
    text = (
        f"Histogram of the scores on {item['cell']} ({item['points']:g} points) of {n} submissions: "
        f"{item['full']} with full marks, {item['partial']} with part of the points, {item['zero']} with none"
    )
    if item["mean"] is not None:
        text += f"; mean {item['mean']:.2f}"
    return text + "."


def histogram(item: dict[str, Any], path: Path) -> None:
    """One cell's score histogram as a PNG: ten equal bins from 0 to the cell's points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = item["points"] or 1.0
    fig, ax = plt.subplots(figsize=(4.8, 3.0), dpi=100)
    ax.hist(item["scores"], bins=10, range=(0, pts), color=BLUE, edgecolor="black", linewidth=0.6)
    rate = "" if item["pass_rate"] is None else f", {100 * item['pass_rate']:.0f}% full marks"
    ax.set_title(f"{item['cell']}{rate}", fontsize=10)
    ax.set_xlabel(f"score (points out of {pts:g})")
    ax.set_ylabel("submissions")
    ax.set_xlim(0, pts)
    ax.yaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]  # an AutoLocator
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, metadata={"Title": item["cell"], "Description": alt_text(item)})
    plt.close(fig)


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def report_html(analysis: dict[str, Any], images: dict[str, str]) -> str:
    """A self-contained page (images beside it): the table, then each cell's messages and histogram."""
    title = f"Item analysis: {analysis['assignment']}"
    rows = []
    shown = None
    for it in analysis["cells"]:
        if it.get("notebook") and it["notebook"] != shown:
            shown = it["notebook"]
            rows.append(f'<tr><th colspan="7" scope="rowgroup">notebook <code>{_esc(shown)}</code></th></tr>')
        rate = "–" if it["pass_rate"] is None else f"{100 * it['pass_rate']:.0f}%"
        mean = "–" if it["mean"] is None else f"{it['mean']:.2f}"
        rows.append(
            f'<tr><td><a href="#{_esc(it["cell"])}"><code>{_esc(it["cell"])}</code></a></td>'
            f"<td>{it['points']:g}</td><td>{rate}</td><td>{it['full']}</td><td>{it['partial']}</td>"
            f"<td>{it['zero']}</td><td>{mean}</td></tr>"
        )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title><style>",
        "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#111}"
        "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.25rem .5rem;text-align:right}"
        "td:first-child,th:first-child{text-align:left}figure{margin:1rem 0}",
        "</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        f"<p>{analysis['students']} graded submissions (missing ones are not counted). The pass rate is the "
        "share with full marks on the cell; the messages are those the check gave to submissions without "
        "full marks, numbers replaced by #, most common first.</p>",
        "<table><thead><tr><th>graded cell</th><th>points</th><th>pass rate</th><th>full marks</th>"
        "<th>part</th><th>none</th><th>mean</th></tr></thead><tbody>",
        *rows,
        "</tbody></table>",
    ]
    for it in analysis["cells"]:
        where = f" in <code>{_esc(it['notebook'])}</code>" if it.get("notebook") else ""
        parts.append(f'<h2 id="{_esc(it["cell"])}"><code>{_esc(it["cell"])}</code>{where}</h2>')
        if it.get("not_graded_yet"):
            parts.append(f"<p>{it['not_graded_yet']} submission(s) not graded on this cell yet: not counted.</p>")
        if it["messages"]:
            parts.append("<ol>")
            for m in it["messages"]:
                parts.append(
                    f"<li>{m['count']} &times; <q>{_esc(m['message'])}</q><br>"
                    f"<small>for example: {_esc(m['example'])}</small></li>"
                )
            parts.append("</ol>")
        else:
            parts.append("<p>No submission lost points here, or the results hold no message.</p>")
        if it["cell"] in images:
            parts.append(
                f'<figure><img src="{_esc(images[it["cell"]])}" alt="{_esc(alt_text(it))}">'
                f"<figcaption>{_esc(alt_text(it))}</figcaption></figure>"
            )
    parts.append("</body></html>")
    return "\n".join(parts)


def csv_text(analysis: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "notebook",
            "cell",
            "points",
            "students",
            "pass_rate",
            "full",
            "partial",
            "zero",
            "mean",
            "top_message",
            "top_message_count",
        ]
    )
    for it in analysis["cells"]:
        top = it["messages"][0] if it["messages"] else {"message": "", "count": 0}
        w.writerow(
            [
                it.get("notebook", ""),
                it["cell"],
                f"{it['points']:g}",
                it["students"],
                "" if it["pass_rate"] is None else f"{it['pass_rate']:.4f}",
                it["full"],
                it["partial"],
                it["zero"],
                "" if it["mean"] is None else f"{it['mean']:.4f}",
                top["message"],
                top["count"],
            ]
        )
    return buf.getvalue()


def write(
    db_url: str,
    course_id: str,
    assignment: str,
    reports_dir: Path,
    *,
    notebook: str | None = None,
    order: list[str] | None = None,
) -> dict[str, Any]:
    """Analyse from the gradebook and ``reports_dir/results``; write the report files; return the analysis.

    ``order`` lists the graded cells in notebook order (see :func:`release_order`).
    """
    points, scores, where = scores_from_gradebook(db_url, course_id, assignment, notebook)
    if not scores:
        raise AnalysisError(f"the gradebook holds no submission of {assignment!r}: nothing to analyse")
    messages = messages_from_results(reports_dir / "results")
    analysis = analyse(points, scores, messages, order, assignment=assignment, notebooks=where)
    images = {}
    for i, it in enumerate(analysis["cells"]):
        name = f"item_{i + 1:02d}_{re.sub(r'[^A-Za-z0-9_-]+', '_', it['cell'])}.png"
        histogram(it, reports_dir / "item_analysis" / name)
        images[it["cell"]] = f"item_analysis/{name}"
    write_text_atomic(reports_dir / "item_analysis.html", report_html(analysis, images))
    write_json_atomic(reports_dir / "item_analysis.json", analysis)
    write_text_atomic(reports_dir / "item_analysis.csv", csv_text(analysis))
    return analysis
