"""The built search index knows where the book teaches each glossary term.

``_ext/search_results.py`` turns each bold glossary link (the book's way of
introducing a term) into a main entry of the index; the search page ranks such
entries first (``tests/test_browser_search.py`` checks the page itself).
"""

from __future__ import annotations

import json
import re

from built_book import HTML, built_page


def _search_index() -> dict:
    text = (HTML / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def test_logit_is_a_main_index_entry_of_chapter_1_and_of_the_glossary():
    index = _search_index()
    entries = {(index["docnames"][doc], anchor, main) for doc, anchor, main in index["indexentries"]["logit"]}
    assert ("chapters/01_self_attention", "taught-logit", True) in entries, entries
    assert ("appendix/notation", "term-logit", True) in entries, entries


def test_the_taught_anchor_is_the_paragraph_that_introduces_the_term():
    page = built_page("chapters/01_self_attention.html")
    paragraph = re.search(r'<p id="taught-logit">(.*?)</p>', page, re.S)
    assert paragraph, "chapter 1 has no paragraph with the id taught-logit"
    assert re.search(r'<strong><a [^>]*href="../appendix/notation.html#term-logit"', paragraph.group(1))


def test_every_page_that_teaches_a_term_is_in_the_search_index():
    index = _search_index()
    taught = {
        (index["docnames"][doc], anchor)
        for entries in index["indexentries"].values()
        for doc, anchor, main in entries
        if anchor.startswith("taught-")
    }
    for path in sorted((HTML / "chapters").glob("*.html")):
        ids = set(re.findall(r'id="(taught-[^"]+)"', path.read_text(encoding="utf-8")))
        docname = f"chapters/{path.stem}"
        missing = {i for i in ids if (docname, i) not in taught}
        assert not missing, f"{docname}: taught anchors missing from the search index: {sorted(missing)}"
    assert len(taught) >= 30, f"only {len(taught)} places teach a term"
