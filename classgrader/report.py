"""Stage 5 of grading one submission: the learner's feedback, one self-contained HTML page.

The page shows the notebook as graded: the release's text, the learner's
answers with their (bounded) output, and under each graded test cell its
points and what the outside comparison found. With a late penalty, the header
shows the raw score, the penalty, the final score and why (see
:mod:`classgrader.late`). It is built from the release's
*student* version of the test cells, so hidden tests never appear. Everything
the learner wrote is escaped; the learner's Markdown is rendered with raw
HTML switched off.
"""

from __future__ import annotations

import html

import nbformat
from markdown_it import MarkdownIt

from nbgrader_tools.cells import nbgrader_meta

from . import late
from .records import STATUSES, Result

_MD_RELEASE = MarkdownIt("commonmark", {"html": True})
_MD_LEARNER = MarkdownIt("commonmark", {"html": False})

CSS = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #111; }
header { border-bottom: 2px solid #0072B2; margin-bottom: 1.5rem; }
.score { font-size: 1.4rem; font-weight: bold; }
pre { background: #f5f5f5; padding: .6rem; overflow-x: auto; white-space: pre-wrap; border-radius: 4px; }
.out { background: #fff; border-left: 3px solid #999; }
.err { border-left-color: #D55E00; }
.cell { margin: 1rem 0; }
.grade { padding: .4rem .6rem; border-radius: 4px; margin-top: .3rem; }
.pass { background: #e0f0fa; border-left: 4px solid #0072B2; }
.fail { background: #fbe9dd; border-left: 4px solid #D55E00; }
.note { color: #444; font-size: .9rem; }
.late { border-left: 4px solid #D55E00; padding-left: .6rem; }
"""


def _esc(text: str | None) -> str:
    return html.escape(text or "", quote=True)


def _score_lines(result: Result) -> list[str]:
    """The score; with a late penalty, the raw score, the penalty and why."""
    lt = late.late_of(result)
    mx = result["max_score"]
    if not lt.get("penalty"):
        lines = [f'<p class="score">Score: {result["score"]:g} / {mx:g}</p>']
    else:
        lines = [
            f'<p class="score">Score: {late.final_score(result):g} / {mx:g}</p>',
            f'<p class="late">Raw score {result["score"]:g}, late penalty '
            f"&minus;{lt['penalty']:g}, final score {late.final_score(result):g}.</p>",
        ]
    if lt.get("submitted_at"):
        lines.append(
            f'<p class="note">Submitted at {_esc(lt["submitted_at"])} (UTC)'
            + (f"; deadline {_esc(lt['deadline'])} (UTC)" if lt.get("deadline") else "")
            + ".</p>"
        )
    if lt.get("note"):
        lines.append(f'<p class="late">{_esc(lt["note"][:1:].upper() + lt["note"][1:])}.</p>')
    return lines


def render(result: Result, nb: nbformat.NotebookNode | None) -> str:
    """The feedback page for one graded result and its autograded notebook."""
    title = f"Feedback: {result['assignment']} for {result['student']}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>",
        "<header>",
        f"<h1>{_esc(result['assignment'])}</h1>",
        f"<p>Student: <strong>{_esc(result['student'])}</strong></p>",
        *_score_lines(result),
        f"<p>Status: {_esc(STATUSES.get(result['status'], result['status']))}</p>",
    ]
    for note in result.get("notes", []):
        parts.append(f'<p class="note">{_esc(note)}</p>')
    parts.append("</header>")
    if nb is None:
        parts.append("<p>There is no notebook to show.</p></body></html>")
        return "\n".join(parts)
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        from_release = bool(meta) and not meta.get("solution")
        parts.append('<div class="cell">')
        if cell.cell_type == "markdown":
            md = _MD_RELEASE if from_release else _MD_LEARNER
            parts.append(md.render(cell.source))
        elif cell.cell_type == "code":
            parts.append(f"<pre><code>{_esc(cell.source)}</code></pre>")
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream":
                    parts.append(f'<pre class="out">{_esc(out.get("text", ""))}</pre>')
                elif out.get("output_type") == "error":
                    parts.append(
                        f'<pre class="out err">{_esc(out.get("ename", ""))}: {_esc(out.get("evalue", ""))}</pre>'
                    )
            gid = meta.get("grade_id")
            if meta.get("grade") and gid in result["cells"]:
                c = result["cells"][gid]
                score = "not graded yet" if c.get("score") is None else f"{c['score']:g} / {c['points']:g} points"
                klass = "pass" if c.get("passed") else "fail"
                parts.append(
                    f'<div class="grade {klass}"><strong>{_esc(gid)}</strong>: {score}. '
                    f"{_esc(c.get('message', ''))}</div>"
                )
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
