"""Per-student feedback as one self-contained HTML page.

The page shows the notebook as graded: the release's text, the learner's
answers with their (bounded) output, and under each graded test cell its
points and what the outside comparison found. It is built from the release's
*student* version of the test cells, so hidden tests never appear. Everything
the learner wrote is escaped; the learner's Markdown is rendered with raw
HTML switched off.
"""

from __future__ import annotations

import html

from markdown_it import MarkdownIt

from .grade import STATUSES

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
"""


def _esc(text: str) -> str:
    return html.escape(text or "", quote=True)


def render(result: dict, nb) -> str:
    """The feedback page for one graded result and its autograded notebook."""
    title = f"Feedback: {result['assignment']} for {result['student']}"
    parts = [
        "<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>",
        "<header>", f"<h1>{_esc(result['assignment'])}</h1>",
        f"<p>Student: <strong>{_esc(result['student'])}</strong></p>",
        f"<p class=\"score\">Score: {result['score']:g} / {result['max_score']:g}</p>",
        f"<p>Status: {_esc(STATUSES.get(result['status'], result['status']))}</p>",
    ]
    for note in result.get("notes", []):
        parts.append(f"<p class=\"note\">{_esc(note)}</p>")
    parts.append("</header>")
    if nb is None:
        parts.append("<p>There is no notebook to show.</p></body></html>")
        return "\n".join(parts)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        from_release = bool(meta) and not meta.get("solution")
        parts.append("<div class=\"cell\">")
        if cell.cell_type == "markdown":
            md = _MD_RELEASE if from_release else _MD_LEARNER
            parts.append(md.render(cell.source))
        elif cell.cell_type == "code":
            parts.append(f"<pre><code>{_esc(cell.source)}</code></pre>")
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream":
                    parts.append(f"<pre class=\"out\">{_esc(out.get('text', ''))}</pre>")
                elif out.get("output_type") == "error":
                    parts.append(f"<pre class=\"out err\">{_esc(out.get('ename', ''))}: {_esc(out.get('evalue', ''))}</pre>")
            gid = meta.get("grade_id")
            if meta.get("grade") and gid in result["cells"]:
                c = result["cells"][gid]
                score = "not graded yet" if c.get("score") is None else f"{c['score']:g} / {c['points']:g} points"
                klass = "pass" if c.get("passed") else "fail"
                parts.append(f"<div class=\"grade {klass}\"><strong>{_esc(gid)}</strong>: {score}. "
                             f"{_esc(c.get('message', ''))}</div>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
