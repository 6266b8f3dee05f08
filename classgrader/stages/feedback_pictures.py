"""Mistakes drawn in the feedback: a wrong matrix of weights under its graded test cell.

After the comparison, each failed *visible* check whose results hold a
visibly wrong matrix of weights gets a picture (:mod:`grading.pictures`: the
learner's weights, the expected ones and their difference, with alt text
saying what differs). It is added to the autograded notebook as the test
cell's display output, so that the feedback page (:mod:`classgrader.stages.report`)
shows it, and shows it again when the page is written anew from that
notebook. Hidden checks are never drawn: their inputs are the learner's
hidden inputs.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from typing import TYPE_CHECKING, Any

import nbformat

from nbgrader_tools.cells import nbgrader_meta

if TYPE_CHECKING:  # the report imports this module, and the assignment imports the report
    from classgrader.assignments.course import AssignmentInfo
    from classgrader.stages.sandbox_run import Runs
    from classgrader.stages.scoring import Scores

__all__ = ["attach", "figure_html"]

#: What marks a display output of a test cell as the grader's picture of a mistake.
KIND = "classgrader/mistake"
_BASE64 = re.compile(r"^[A-Za-z0-9+/\s]*={0,2}\s*$")


def attach(nb: nbformat.NotebookNode, info: AssignmentInfo, runs: Runs, scores: Scores) -> int:
    """Add the picture of each failed visible check's mistake under its test cell; return how many."""
    from sdpa_course.grading import pictures

    cells = {}
    for c in nb.cells:
        meta = nbgrader_meta(c)
        if c.cell_type == "code" and meta.get("grade") and not meta.get("solution"):  # a test cell
            cells[meta.get("grade_id")] = c
    added = 0
    for check in info.checks:
        verdict, event, cell = scores.verdicts.get(check.id), runs.checks.get(check.id), cells.get(check.id)
        if check.hidden or verdict is None or verdict.passed or event is None or cell is None:
            continue
        if event.get("status") != "ok" or not isinstance(event.get("results"), list):
            continue
        try:
            picture = pictures.picture_for(check, runs.cases[check.id], event["results"])
        except Exception:  # untrusted results that cannot be drawn: the words still say what is wrong
            continue
        if picture is None:
            continue
        encoded = base64.b64encode(picture.png).decode("ascii")
        cell.outputs.append(
            nbformat.v4.new_output(
                "display_data",
                data={"image/png": encoded, "text/plain": picture.alt},
                metadata={"image/png": {"alt": picture.alt}, KIND: True},
            )
        )
        added += 1
    return added


def figure_html(output: dict[str, Any]) -> str | None:
    """A self-contained ``<figure>`` for one of :func:`attach`'s outputs (the PNG inline, its alt
    text, and the alt text again as the caption), or None for any other output."""
    meta = output.get("metadata") or {}
    data = output.get("data") or {}
    png = data.get("image/png")
    if output.get("output_type") != "display_data" or not meta.get(KIND) or not isinstance(png, str):
        return None
    if not _BASE64.match(png):
        return None
    try:
        base64.b64decode(png, validate=False)
    except (binascii.Error, ValueError):
        return None
    alt = str((meta.get("image/png") or {}).get("alt") or data.get("text/plain") or "")
    encoded = "".join(png.split())
    return (
        '<figure class="mistake">'
        f'<img src="data:image/png;base64,{encoded}" alt="{html.escape(alt, quote=True)}">'
        f"<figcaption>{html.escape(alt)}</figcaption></figure>"
    )
