"""The table of contents (``_toc.yml``) decides which chapters and homework the book has.

Dropping a chapter or a homework is one edit: remove its line from
``_toc.yml``. Two things follow from that one list:

- ``{course-map}``, the welcome page's map: one row per chapter of the table
  of contents, in its order, with the chapter's question and its homework
  from ``chapters/course_map.yml``, each homework named with its number, and
  each chapter and homework with the time it takes, estimated from its length
  by ``_ext/study_time.py``; under the map, the totals and how they are
  estimated. A homework that is not in the table of contents leaves its cell
  empty; a chapter in the table of contents with no entry in that file is an
  error that names it.
- A link to a page that exists but is not in the table of contents (``{doc}``
  or a Markdown link, e.g. chapter 10's mention of chapter 9 once chapter 9 is
  dropped) becomes the plain text of its title: no dangling link, and no
  warning. A link to a file that does not exist still fails the build.

Listed under ``sphinx: local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import docname_join, logging
from sphinx.util.docutils import SphinxDirective
from study_time import chapter_minutes, homework_minutes, how_estimated, study_files

logger = logging.getLogger(__name__)

MAP_FILE = "chapters/course_map.yml"
SUFFIXES = (".md", ".ipynb")
HOMEWORK_NUMBER = re.compile(r"^hw(\d+)_")


def homework_title(name: str, label: str) -> str:
    """ "Homework 2: stable softmax" for ``hw2_stable_softmax`` labelled "stable softmax"."""
    number = HOMEWORK_NUMBER.match(name)
    return f"Homework {number[1]}: {label}" if number else label


def hours(minutes: int) -> str:
    """A total for readers: "40 minutes" below an hour, else hours to the nearest half: "9.5 hours"."""
    if minutes < 60:
        return f"{minutes} minutes"
    half_hours = math.floor(minutes / 30 + 0.5)
    return "1 hour" if half_hours == 2 else f"{half_hours / 2:g} hours"


def toc_files(toc_path: Path) -> list[str]:
    """Every ``file:`` of a jupyter-book table of contents, in order (root first)."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8")) or {}
    found = [str(toc["root"])] if toc.get("root") else []

    def walk(entries: list[dict[str, Any]]) -> None:
        for entry in entries or []:
            if "file" in entry:
                found.append(str(entry["file"]))
            for key in ("sections", "chapters", "parts"):
                walk(entry.get(key, []))

    walk(toc.get("parts", []) + toc.get("chapters", []))
    return [name.rsplit(".", 1)[0] if name.endswith(SUFFIXES) else name for name in found]


def map_rows(entries: list[dict[str, str]], in_toc: list[str]) -> list[tuple[str, str, str]]:
    """(number, chapter docname, homework docname or "") for each chapter in ``in_toc`` order.

    ``entries`` are the map file's: ``chapter`` (a file in ``chapters/``, no
    suffix), ``question`` and optionally ``homework`` (an assignment name).
    Raises ``ValueError`` naming a chapter of the table of contents with no entry.
    """
    by_doc = {f"chapters/{e['chapter']}": e for e in entries}
    rows = []
    for docname in in_toc:
        if not docname.startswith("chapters/") or docname == "chapters/00_welcome":
            continue
        if docname not in by_doc:
            raise ValueError(f"{docname} is in _toc.yml but has no entry in {MAP_FILE}")
        entry = by_doc[docname]
        hw = entry.get("homework", "")
        hw_doc = f"exercises/{hw}/{hw}" if hw else ""
        number = docname.split("/", 1)[1].split("_", 1)[0].lstrip("0")
        rows.append((number, docname, hw_doc if hw_doc in in_toc else ""))
    return rows


class CourseMap(SphinxDirective):
    """The map of the book: the table of contents' chapters, their questions, their homework."""

    has_content = False

    def _toc_path(self) -> Path:
        configured = getattr(self.config, "external_toc_path", "") or "_toc.yml"
        path = Path(configured)
        return path if path.is_absolute() else Path(self.env.srcdir) / path

    def run(self) -> list[nodes.Node]:
        toc, data = self._toc_path(), Path(self.env.srcdir) / MAP_FILE
        self.env.note_dependency(str(toc))
        self.env.note_dependency(str(data))
        entries = yaml.safe_load(data.read_text(encoding="utf-8"))
        try:
            rows = map_rows(entries, toc_files(toc))
        except ValueError as exc:
            raise self.error(str(exc)) from None
        by_chapter = {f"chapters/{e['chapter']}": e for e in entries}
        here = self.env.docname.count("/")
        up = "../" * here
        src = Path(self.env.srcdir)
        lines = ["| | Chapter | The question it answers | Homework |", "|---|---|---|---|"]
        reading = writing = 0
        for number, chapter, homework in rows:
            entry = by_chapter[chapter]
            page = src / f"{chapter}.md"
            for used in (page, *study_files(page)):
                self.env.note_dependency(str(used))
            minutes = chapter_minutes(page)
            reading += minutes
            hw = ""
            if homework:
                notebook = src / f"{homework}.ipynb"
                self.env.note_dependency(str(notebook))
                hw_minutes = homework_minutes(notebook)
                writing += hw_minutes
                title = homework_title(homework.rsplit("/", 1)[-1], entry.get("homework_label", "homework"))
                hw = f"{{doc}}`{title} <{up}{homework}>` (about {hw_minutes} min)"
            chapter_cell = f"{{doc}}`{up}{chapter}` (about {minutes} min)"
            lines.append(f"| {number} | {chapter_cell} | {entry['question']} | {hw} |")
        lines += [
            "",
            f"In all, about {hours(reading)} of chapters and {hours(writing)} of homework. {how_estimated()}",
        ]
        container = nodes.container(classes=["course-map"])
        self.state.nested_parse(StringList(lines, source=str(data)), self.content_offset, container)
        return list(container.children)


def page_title(path: Path) -> str:
    """The first ``# `` heading of a MyST page or a notebook's Markdown cells."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        text = "\n".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


class DroppedPageLinks(SphinxPostTransform):
    """Links to pages left out of the table of contents become their plain text (before
    Sphinx's and MyST's resolvers, which would warn)."""

    default_priority = 5

    def run(self, **kwargs: Any) -> None:
        srcdir = Path(self.env.srcdir)
        for node in list(self.document.findall(addnodes.pending_xref)):
            if node.get("reftype") == "doc":
                docname = docname_join(node.get("refdoc", self.env.docname), node["reftarget"])
            elif node.get("reftype") == "myst" and node.get("refdomain") == "doc":
                docname = node["reftarget"]
            else:
                continue
            if docname in self.env.all_docs:
                continue
            source = next((srcdir / (docname + s) for s in SUFFIXES if (srcdir / (docname + s)).is_file()), None)
            if source is None:
                continue  # a link to nothing: Sphinx says so
            text = node.astext() if node.get("refexplicit") else page_title(source)
            node.replace_self(nodes.inline(text, text, classes=["dropped-page"]))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("course-map", CourseMap)
    app.add_post_transform(DroppedPageLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
