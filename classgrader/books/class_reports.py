"""The class-level outputs: scores CSV, LMS import files, status summary, score histogram.

``score`` in ``student_scores.csv`` is the final score, after the late penalty (see
:mod:`classgrader.after_deadline.late`); ``raw_score`` is the score before it, and
``late_penalty`` the points taken off, so ``score = raw_score - late_penalty``
on every row, as in ``nbgrader export``.
"""

from __future__ import annotations

import collections
import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classgrader.after_deadline import late
from classgrader.assignments import plain_nbgrader
from classgrader.books import lms_export
from classgrader.records import STATUSES, Result, atomic_path, write_json_atomic, write_text_atomic
from classgrader.sandbox.mode import DESCRIPTIONS

CSV_COLUMNS = [
    "student_id",
    "name",
    "score",
    "max_score",
    "percent",
    "status",
    "flagged",
    "raw_score",
    "late_penalty",
    "submitted_at",
    "late",
    "extension",
    "notes",
]
LATE_WORDS = {
    "on_time": "on time",
    "in_grace": "in grace period",
    "late": "late",
    "late_no_time": "late (LMS marker, no time)",
    "no_time": "time unknown",
    "unreadable": "time unreadable",
    "no_deadline": "",
    "missing": "",
}
# Okabe & Ito's colour-blind-safe palette.
BLUE, VERMILLION = "#0072B2", "#D55E00"


#: The class's scores, one row per student, with status, penalty and notes (not nbgrader export's file).
SCORES_CSV = "student_scores.csv"
#: The LMS import files (classgrader.books.lms_export).
CANVAS_CSV, MOODLE_CSV = "canvas_import.csv", "moodle_import.csv"


def scores_csv(results: list[Result]) -> str:
    """One row per student, sorted by id: scores, status, late penalty and notes."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in sorted(results, key=lambda r: r["student"]):
        mx = float(r.get("max_score") or 0)
        raw = float(r.get("score") or 0)
        score = late.final_score(r)
        lt = late.late_of(r)
        notes = list(r.get("notes", [])) + ([lt["note"]] if lt.get("note") else [])
        if r.get("manual"):  # still waiting in the formgrader (classgrader.books.hand_grades counts what is done)
            notes.append(f"{', '.join(r['manual'])}: {plain_nbgrader.MANUAL}")
        writer.writerow(
            [
                r["student"],
                r.get("display_name") or "",
                f"{score:g}",
                f"{mx:g}",
                f"{100 * score / mx:.1f}" if mx else "",
                r["status"],
                "yes" if r.get("flagged") else "",
                f"{raw:g}",
                f"{late.penalty_of(r):g}",
                lt.get("submitted_at") or "",
                LATE_WORDS.get(lt.get("status", ""), lt.get("status", "")),
                late.human(float(lt["extension"])) if lt.get("extension") else "",
                " | ".join(notes)[:500],
            ]
        )
    return buf.getvalue()


def submitted(results: list[Result]) -> list[Result]:
    """The results of students who handed something in (all but the missing): what the means and histogram count."""
    return [r for r in results if r["status"] != "missing"]


def summary(
    results: list[Result],
    *,
    assignment: str,
    seconds: float,
    workers: int,
    policy: late.Policy | None = None,
    sandbox: str | None = None,
) -> dict[str, Any]:
    counts = collections.Counter(r["status"] for r in results)
    handed_in = submitted(results)
    lates = [r for r in results if late.late_of(r).get("status") in ("late", "late_no_time")]
    unknown: dict[str | None, list[str]] = {late.late_of(r).get("status"): [] for r in results}
    for r in results:
        unknown[late.late_of(r).get("status")].append(r["student"])
    return {
        "assignment": assignment,
        "students": len(results),
        "statuses": {s: counts.get(s, 0) for s in STATUSES if counts.get(s)},
        "flagged": sorted(r["student"] for r in results if r.get("flagged")),
        # Means over the submissions, as the histogram: a missing student has no score to average.
        "submissions": len(handed_in),
        "missing": len(results) - len(handed_in),
        "missing_students": sorted(r["student"] for r in results if r["status"] == "missing"),
        "mean_score": round(sum(r.get("score") or 0 for r in handed_in) / len(handed_in), 3) if handed_in else None,
        "max_score": max((r.get("max_score") or 0 for r in results), default=0),
        "mean_final_score": (
            round(sum(late.final_score(r) for r in handed_in) / len(handed_in), 3) if handed_in else None
        ),
        "late_policy": policy.describe() if policy is not None else None,
        "late": sorted(r["student"] for r in lates),
        "late_penalty_total": round(sum(late.penalty_of(r) for r in lates), 6),
        "extensions": {r["student"]: lt["extension"] for r in results if (lt := late.late_of(r)).get("extension")},
        "in_grace": sorted(unknown.get("in_grace", [])),
        "time_unknown": sorted(unknown.get("no_time", [])),
        "time_unreadable": {
            r["student"]: r["late"]["note"] for r in results if late.late_of(r).get("status") == "unreadable"
        },
        "seconds": round(seconds, 2),
        "workers": workers,
        "sandbox": sandbox,  # the sandbox mode: root, userns, none (see classgrader.sandbox.mode)
    }


def summary_text(s: Mapping[str, Any]) -> str:
    lines = [f"{s['assignment']}: {s['students']} students in {s['seconds']:.1f} s with {s['workers']} workers"]
    if s.get("sandbox"):
        lines.append(f"  sandbox: {s['sandbox']} ({DESCRIPTIONS.get(s['sandbox'], s['sandbox'])})")
    if s.get("threat_model"):
        lines.append(f"  threat model: {s['threat_model']}")
    for status, n in s["statuses"].items():
        lines.append(f"  {n:4d}  {STATUSES[status]}")
    if s.get("missing_students"):
        lines.append("  no submission: " + ", ".join(s["missing_students"]))
    if s["flagged"]:
        lines.append("  flagged (in-kernel tests passed, outside comparison failed): " + ", ".join(s["flagged"]))
    if s["mean_score"] is not None:
        lines.append(f"  mean score {s['mean_score']:g} / {s['max_score']:g}{_over(s)}")
    if s.get("late_policy"):
        lines.append(f"  late policy: {s['late_policy']}")
    if s.get("late"):
        lines.append(
            f"  late ({len(s['late'])}, {s['late_penalty_total']:g} points of penalties): " + ", ".join(s["late"])
        )
        lines.append(f"  mean final score {s['mean_final_score']:g} / {s['max_score']:g}{_over(s)}")
    if s.get("extensions"):
        lines.append(
            "  extensions (nbgrader's gradebook): "
            + ", ".join(f"{student} {late.human(seconds)}" for student, seconds in sorted(s["extensions"].items()))
        )
    if s.get("in_grace"):
        lines.append("  late within the grace period, no penalty: " + ", ".join(s["in_grace"]))
    if s.get("time_unknown"):
        lines.append("  no submission time recorded, no penalty computed: " + ", ".join(s["time_unknown"]))
    for student, note in (s.get("time_unreadable") or {}).items():
        lines.append(f"  {student}: {note}")
    if s.get("needs_manual_grading"):
        waiting = s["needs_manual_grading"]
        lines.append(
            f"  needs manual grading in nbgrader's formgrader ({len(waiting)} submissions): "
            + "; ".join(f"{student} ({', '.join(cells)})" for student, cells in waiting.items())
        )
    if s.get("canvas_written") is False:
        lines.append(
            f"  {CANVAS_CSV} not written: no student has a Canvas or SIS id (give a roster mapping with "
            "--lms-roster, or grade a Canvas export, whose ids are Canvas's)"
        )
    for lms, students in (s.get("lms_left_out") or {}).items():
        if students and (lms != "canvas" or s.get("canvas_written")):
            file = CANVAS_CSV if lms == "canvas" else MOODLE_CSV
            lines.append(
                f"  {file}: left out {len(students)} student(s) the roster mapping cannot place "
                "(add them to --lms-roster): " + ", ".join(students[:10])
            )
    return "\n".join(lines)


def _over(s: Mapping[str, Any]) -> str:
    """What a mean counts: the submissions, and the missing students it leaves out (as the histogram does)."""
    n, missing = s.get("submissions", s["students"]), s.get("missing", 0)
    text = f" over the {n} submission{'s' * (n != 1)}"
    if missing:
        text += f" ({missing} student{'s' * (missing != 1)} with no submission not counted, as in the histogram)"
    return text


def histogram(results: list[Result], path: Path, *, assignment: str) -> Any:
    """Histogram of the scores of everyone who submitted something, as PNG; returns the figure (for checks),
    closed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graded = submitted(results)
    scores = [float(r.get("score") or 0) for r in graded]
    mx = max((float(r.get("max_score") or 0) for r in results), default=0.0) or 1.0
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    bins = min(20, max(int(mx), 1))
    ax.hist(scores, bins=bins, range=(0, mx), color=BLUE, edgecolor="black", linewidth=0.6)
    missing = len(results) - len(graded)
    title = f"{assignment}: scores of {len(graded)} submissions"
    description = f"Histogram of {assignment} scores of the {len(graded)} submissions"
    if missing:
        title += f" ({missing} missing)"
        description += f"; {missing} student{'s' * (missing != 1)} with no submission not counted, as in the mean"
    import textwrap

    ax.set_title("\n".join(textwrap.wrap(title, 56)), fontsize=11)  # a long assignment name wraps, not clipped
    ax.set_xlabel(f"score (points out of {mx:g})" + ("; students with no submission not counted" if missing else ""))
    ax.set_ylabel("number of students")
    ax.yaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]  # an AutoLocator
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, metadata={"Title": title, "Description": description})
    plt.close(fig)
    return fig


def write_all(
    results: list[Result],
    out: Path,
    *,
    assignment: str,
    seconds: float,
    workers: int,
    policy: late.Policy | None = None,
    sandbox: str | None = None,
    lms: lms_export.LmsOptions | None = None,
    threat_model: str | None = None,
) -> dict[str, Any]:
    """Every class report in ``out``; ``threat_model`` (a plain nbgrader assignment's) goes in the summary."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / SCORES_CSV, scores_csv(results))
    lms = lms or lms_export.LmsOptions()
    title, zero = lms.title or assignment, lms.missing_as_zero
    canvas = lms_export.canvas_csv(results, title, lms.mapping, missing_as_zero=zero)
    if canvas is not None:
        write_text_atomic(out / CANVAS_CSV, canvas)
    else:  # a file Canvas could match nobody in is worse than none; an earlier one is out of date
        (out / CANVAS_CSV).unlink(missing_ok=True)
    write_text_atomic(out / MOODLE_CSV, lms_export.moodle_csv(results, title, lms.mapping, missing_as_zero=zero))
    s = summary(results, assignment=assignment, seconds=seconds, workers=workers, policy=policy, sandbox=sandbox)
    s["canvas_unmatched"] = lms_export.unmatched(results, lms.mapping)
    s["canvas_written"] = canvas is not None
    s["lms_left_out"] = lms_export.left_out(results, lms.mapping)
    if threat_model:
        s["threat_model"] = threat_model
        s["needs_manual_grading"] = {r["student"]: r["manual"] for r in results if r.get("manual")}
    write_json_atomic(out / "summary.json", s)
    write_text_atomic(out / "summary.txt", summary_text(s) + "\n")
    histogram(results, out / "histogram.png", assignment=assignment)
    return s
