"""Search results that rank where a term is taught first and read as text.

Sphinx's search page (``searchtools.js``) ranks a page by where a word occurs
in it, and breaks ties between pages by their titles, alphabetically; so
searching "logit" listed four pages before chapter 1, which teaches the word.
Its summaries are the text of the page around the word, taken from the built
HTML, where math is still TeX source for MathJax (``\\mathrm{softmax}_j``).

This extension uses the hooks Sphinx offers for both:

- **Where a term is taught.** The book introduces a glossary term in bold,
  linked to the glossary (``**{term}`logits <logit>`**``). Each such place
  becomes a main entry of Sphinx's index (the general index lists it, and the
  search ranks an index entry above a mere occurrence of the word), anchored
  at its paragraph, which the search then shows as the summary.
- **Ranking.** A ``Scorer`` (the object ``searchtools.js`` reads, and defines
  only when a page has not; see Sphinx's ``html_search_scorer``) that orders
  equal scores by the book's reading order instead of by title, and places the
  glossary's own entry of a term just after the chapters that teach it.
- **Summaries.** On the search page, the text of a fetched page is taken with
  its math written out as plain text (``√d_k``, ``softmax_j(s_ij)``) and
  without code cells and their outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.transforms import SphinxTransform
from sphinx.util.index_entries import split_index_msg
from sphinx.util.nodes import make_id

SEARCH_JS = Path(__file__).with_name("search_results.js")


def _defined_term(strong: nodes.strong) -> str | None:
    """The glossary term a bold span introduces: its only child is a {term} link."""
    children = [c for c in strong.children if not (isinstance(c, nodes.Text) and not c.strip())]
    if len(children) != 1 or not isinstance(children[0], addnodes.pending_xref):
        return None
    xref = children[0]
    if xref.get("refdomain") != "std" or xref.get("reftype") != "term":
        return None
    return str(xref["reftarget"])


class IndexWhereTermsAreTaught(SphinxTransform):
    """A main index entry for each glossary term a page introduces in bold,
    anchored at the paragraph (or list item, table cell...) that holds it.

    It runs before Sphinx's own collection of index entries (``SphinxDomains``,
    priority 850), so the general index lists these entries too.
    """

    default_priority = 800

    def apply(self, **kwargs: Any) -> None:
        seen: set[str] = set()
        for strong in list(self.document.findall(nodes.strong)):
            term = _defined_term(strong)
            if term is None or term.lower() in seen:
                continue
            block = strong.parent
            while block is not None and not isinstance(block, nodes.TextElement | nodes.Body):
                block = block.parent
            if block is None:
                continue
            seen.add(term.lower())
            target_id = make_id(self.env, self.document, "taught", term)
            block["ids"].append(target_id)
            self.document.note_explicit_target(block)
            index = addnodes.index(entries=[("single", term, target_id, "main", None)], inline=True)
            strong.parent.insert(strong.parent.index(strong), index)


def keep_index_entries_of_unchanged_pages(app: Sphinx, env: BuildEnvironment) -> None:
    """The search index's index entries of every page, from the general index's.

    Sphinx 7.4 gives the search index a page's index entries only when it
    writes the page, after it has saved the environment, and does not read
    them back from the previous ``searchindex.js``: after an incremental build
    the search would know only the entries of the pages it rewrote (and rank
    "logit" as if no page taught it). Filling them here, before the environment
    is saved, keeps them for every page; a rewritten page gets the same entries.
    """
    search_entries = getattr(env, "_search_index_index_entries", None)
    if search_entries is None:
        return
    for docname, entries in env.domains["index"].entries.items():
        found: set[tuple[str, str, str]] = set()
        for entry_type, value, target_id, main, _key in entries:
            try:
                words = split_index_msg(entry_type, value)
            except ValueError:
                continue
            found |= {(word, target_id or "", main) for word in words}
        search_entries[docname] = sorted(found)


def reading_order(env: BuildEnvironment) -> list[str]:
    """Every document in the order of the table of contents, starting at the root."""
    order: list[str] = []

    def walk(docname: str) -> None:
        if docname in order:
            return
        order.append(docname)
        for child in env.toctree_includes.get(docname, []):
            walk(child)

    walk(env.config.root_doc)
    return order


def add_search_script(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """On the search page only: the scorer and the summary text (runs before searchtools.js)."""
    if pagename != "search":
        return
    body = f"const COURSE_READING_ORDER = {json.dumps(reading_order(app.env))};\n"
    app.add_js_file(None, body=body + SEARCH_JS.read_text(encoding="utf-8"))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_transform(IndexWhereTermsAreTaught)
    app.connect("env-updated", keep_index_entries_of_unchanged_pages)
    app.connect("html-page-context", add_search_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
