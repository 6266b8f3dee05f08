"""Stage 5 of grading one submission: the learner's feedback, one self-contained HTML page.

The page shows the notebook as graded: the release's text, the learner's
answers with their (bounded) output, and under each graded test cell its
points and what the outside comparison found. With a late penalty, the header
shows the raw score, the penalty, the final score and why (see
:mod:`classgrader.after_deadline.late`). It is built from the release's
*student* version of the test cells, so hidden tests never appear. Everything
the learner wrote is escaped; the learner's Markdown is rendered with raw
HTML switched off.

The page works offline, as a single file: ``$...$`` and ``$$...$$`` math is
turned into MathML (which browsers typeset themselves, no script, no CDN);
links to the book's chapters (``../../chapters/<name>.md`` in the release)
lead to the published chapter pages when the course names its book's address
(``c.Feedback.book_url`` in ``nbgrader_config.py``), and are plain text
naming the chapter otherwise; times are shown in the late policy's zone.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from xml.etree import ElementTree

import nbformat
from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

from classgrader.after_deadline import late
from classgrader.records import STATUSES, CellResult, Result
from classgrader.stages.feedback_pictures import figure_html
from nbgrader_tools.cells import nbgrader_meta
from nbgrader_tools.generated import START_HERE_ID

#: A link to a chapter of the book, as the release's Markdown writes it (``../../chapters/02_x.md#part``).
CHAPTER_LINK = re.compile(r"^(?:\.\./)*chapters/(?P<page>[\w.-]+?)\.(?:md|ipynb)(?P<anchor>#[\w.-]*)?$")


#: The MathML elements a formula may become; anything else (``\\text{<script>}`` passes through the
#: converter as markup) makes the page show the formula's escaped source instead.
MATHML_TAGS = frozenset(
    "math mrow mi mo mn ms mtext mspace msub msup msubsup mfrac msqrt mroot mover munder munderover "
    "mtable mtr mtd mlabeledtr mstyle mpadded mphantom menclose merror mfenced mmultiscripts mprescripts "
    "none semantics annotation".split()
)


def _safe_mathml(markup: str) -> bool:
    """Whether ``markup`` is MathML elements only, with no event handler or link attribute."""
    if "<!" in markup or "<?" in markup:
        return False
    try:
        root = ElementTree.fromstring(markup)
    except ElementTree.ParseError:
        return False
    for el in root.iter():
        if el.tag.rpartition("}")[2] not in MATHML_TAGS:
            return False
        if any(a.lower().startswith("on") or "href" in a.lower() or "src" in a.lower() for a in el.attrib):
            return False
    return True


def _math(latex: str, display: bool) -> str:
    """MathML for one formula; the escaped source in a code span when it cannot be converted safely."""
    try:
        markup = latex_to_mathml(latex, display="block" if display else "inline")
    except Exception:  # a learner's malformed formula must not stop the page
        markup = ""
    return markup if _safe_mathml(markup) else f'<code class="tex">{_esc(latex)}</code>'


def _markdown(allow_html: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": allow_html}).use(dollarmath_plugin, double_inline=True)
    md.add_render_rule("math_inline", lambda self, tokens, idx, options, env: _math(tokens[idx].content, False))
    md.add_render_rule("math_inline_double", lambda self, tokens, idx, options, env: _math(tokens[idx].content, True))
    md.add_render_rule("math_block", lambda self, tokens, idx, options, env: _math(tokens[idx].content, True) + "\n")
    return md


_MD_RELEASE = _markdown(True)
_MD_LEARNER = _markdown(False)

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
.comment { padding: .4rem .6rem; margin-top: .3rem; border-left: 4px solid #009E73; background: #e6f5f0; }
.late { border-left: 4px solid #D55E00; padding-left: .6rem; }
math[display="block"] { margin: .8rem 0; }
figure.mistake img { max-width: 100%; height: auto; }
figure.mistake figcaption { font-size: .9rem; color: #444; }
"""


def _esc(text: str | None) -> str:
    return html.escape(text or "", quote=True)


def _chapter_links(tokens: list[Token], base: str | None) -> None:
    """Point the release's links to chapters at the published pages (``base``), or make them plain text."""
    for tok in tokens:
        children = tok.children or []
        for i, child in enumerate(children):
            href = str(child.attrGet("href") or "") if child.type == "link_open" else ""
            m = CHAPTER_LINK.match(href)
            if not m:
                continue
            if base is not None:
                child.attrSet("href", f"{base}chapters/{m['page']}.html{m['anchor'] or ''}")
                continue
            # No address to lead to: the link's words stay, as text, and say which chapter it means.
            close = next(j for j in range(i + 1, len(children)) if children[j].type == "link_close")
            child.type, child.tag, child.attrs = "html_inline", "", {}
            child.content = '<span class="chapter">'
            children[close].type, children[close].tag = "html_inline", ""
            children[close].content = f"</span> (the book's chapter {_esc(m['page'])})"


def _render_markdown(source: str, from_release: bool, base: str | None) -> str:
    md = _MD_RELEASE if from_release else _MD_LEARNER
    tokens = md.parse(source)
    if from_release:
        _chapter_links(tokens, base)
    rendered: str = md.renderer.render(tokens, md.options, {})
    return rendered


def _in_zone(iso: str, zone_name: str | None) -> str:
    """An ISO time (UTC) shown in ``zone_name``, e.g. ``2026-03-01 23:59 (Europe/Berlin, UTC+01:00)``."""
    try:
        when = dt.datetime.fromisoformat(iso)
        local = when.astimezone(late.zone(zone_name or "UTC"))
    except (ValueError, late.LatePolicyError):
        return f"{iso} (UTC)"
    shown = local.strftime("%Y-%m-%d %H:%M:%S").removesuffix(":00")
    if not zone_name or zone_name == "UTC":
        return f"{shown} (UTC)"
    offset = local.strftime("%z")
    return f"{shown} ({zone_name}, UTC{offset[:3]}:{offset[3:]})"


def cell_words(cell: CellResult) -> str:
    """A graded cell's score and its verdict in words that agree with it.

    >>> cell_words({"points": 2, "score": 1.0, "message": "", "passed": False})
    '1 / 2 points: partly right'
    >>> cell_words({"points": 2, "score": 0.0, "message": "", "passed": False})
    '0 / 2 points: not right'
    """
    score, points = cell.get("score"), float(cell.get("points") or 0)
    if score is None:
        return f"not graded yet (up to {points:g} points)"
    if score >= points:
        word = "passed"
    elif score > 0:
        word = "partly right"
    else:
        word = "not right"
    return f"{score:g} / {points:g} points: {word}"


def cell_verdict(cell: CellResult) -> str:
    """:func:`cell_words` and the cell's message, unless the message only says the verdict again.

    >>> cell_verdict({"points": 1, "score": 1.0, "message": "passed", "passed": True})
    '1 / 1 points: passed'
    >>> cell_verdict({"points": 2, "score": 2.0, "message": "graded by hand", "passed": True})
    '2 / 2 points: passed. graded by hand'
    """
    words, message = cell_words(cell), cell.get("message", "")
    return words if not message or words.endswith(message) else f"{words}. {message}"


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
    submitted, deadline, tz = lt.get("submitted_at"), lt.get("deadline"), lt.get("timezone")
    if submitted:
        lines.append(
            f'<p class="note">Submitted at {_esc(_in_zone(str(submitted), tz))}'
            + (f"; deadline {_esc(_in_zone(str(deadline), tz))}" if deadline else "")
            + ".</p>"
        )
    if lt.get("note"):
        lines.append(f'<p class="late">{_esc(lt["note"][:1:].upper() + lt["note"][1:])}.</p>')
    return lines


def render(
    result: Result, nb: nbformat.NotebookNode | None, *, base_url: str | None = None, stem: str | None = None
) -> str:
    """The feedback page for one graded result and its autograded notebook.

    ``base_url`` is the published book's address, for the links to its chapters (``c.Feedback.book_url``);
    ``stem`` the notebook's, when the assignment has several (a grade id two of them use is
    ``<stem>/<grade id>`` in the result).
    """
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
            source = cell.source
            if meta.get("grade_id") == START_HERE_ID:
                # Where to work and how to hand in was for before the deadline; the title stays.
                source = source.split("\n", 1)[0]
            parts.append(_render_markdown(source, from_release, base_url))
        elif cell.cell_type == "code":
            parts.append(f"<pre><code>{_esc(cell.source)}</code></pre>")
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream":
                    parts.append(f'<pre class="out">{_esc(out.get("text", ""))}</pre>')
                elif out.get("output_type") == "error":
                    parts.append(
                        f'<pre class="out err">{_esc(out.get("ename", ""))}: {_esc(out.get("evalue", ""))}</pre>'
                    )
                elif meta.get("grade") and from_release and (figure := figure_html(out)):
                    parts.append(figure)
        if cell.cell_type in ("code", "markdown"):  # a graded cell's points (a written answer's too)
            gid = meta.get("grade_id")
            if stem is not None and f"{stem}/{gid}" in result["cells"]:
                gid = f"{stem}/{gid}"
            if meta.get("grade") and gid in result["cells"]:
                c = result["cells"][gid]
                full = c.get("score") is not None and float(c["score"] or 0) >= float(c.get("points") or 0)
                klass = "pass" if full else "fail"
                parts.append(f'<div class="grade {klass}"><strong>{_esc(gid)}</strong>: {_esc(cell_verdict(c))}</div>')
            hand = result.get("hand_comments", {})  # typed in nbgrader's formgrader
            said = hand.get(f"{stem}/{meta.get('grade_id')}") or hand.get(meta.get("grade_id") or "")
            if said:
                parts.append(f'<div class="comment"><strong>Your instructor\'s comment</strong>: {_esc(said)}</div>')
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
