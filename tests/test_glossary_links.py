"""Every glossary term links to its glossary entry where a chapter first uses it.

The rules for what counts as a chapter's prose, and how a term is found in it,
are in ``tests/glossary_links.py``: headings, titles, code, cell outputs, math,
figure captions and the text of other links are skipped on every page alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from built_book import built_page
from glossary_links import FirstUse, first_uses, glossary_terms, term_pattern

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.md"))


def _terms() -> dict[str, str]:
    return glossary_terms(built_page("appendix/notation.html"))


def test_the_glossary_is_a_sphinx_glossary_with_its_terms():
    terms = _terms()
    assert len(terms) >= 60, f"the built glossary lists {len(terms)} terms"
    for term in ("logit", "embedding", "query", "key", "value", "softmax", "causal mask"):
        assert term in terms, f"{term!r} is not a term of the built glossary"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_first_use_of_each_glossary_term_links_to_its_entry(chapter):
    terms = _terms()
    uses = first_uses(built_page(f"chapters/{chapter}.html"), terms)
    assert uses, f"{chapter} uses no glossary term at all"
    unlinked = [
        f"{term!r} first used as {use.text!r} in: ...{use.context}..."
        for term, use in uses.items()
        if use.anchor != terms[term]
    ]
    assert not unlinked, f"{chapter}: a first use is not a link to the glossary:\n" + "\n".join(unlinked)


# The reading rules themselves, on pages small enough to check by eye.
GLOSSARY = '<dl class="glossary"><dt id="term-mask">mask<a class="headerlink" href="#term-mask">#</a></dt><dd>x</dd>'
GLOSSARY += '<dt id="term-causal-mask">causal mask</dt><dd>y</dd><dt id="term-query">query</dt><dd>z</dd></dl>'
LINK = '<a class="reference internal" href="../appendix/notation.html#term-{0}"><span class="xref">{1}</span></a>'


def _page(body: str) -> str:
    return f"<html><body><nav>mask query</nav><article class='bd-article'>{body}</article></body></html>"


def test_the_glossary_reader_finds_terms_and_anchors():
    assert glossary_terms(GLOSSARY) == {"mask": "term-mask", "causal mask": "term-causal-mask", "query": "term-query"}


def test_plurals_and_word_boundaries():
    assert term_pattern("query").search("two queries")
    assert term_pattern("key").search("the keys")
    assert term_pattern("head").search("the heads")
    assert not term_pattern("head").search("multi-head attention")
    assert not term_pattern("mask").search("masked")
    assert term_pattern("warm-up (learning rate)").search("a warm-up")
    assert term_pattern("dot product").search("a dot\n  product")


def test_an_unlinked_first_use_is_reported_and_a_linked_one_is_not():
    terms = glossary_terms(GLOSSARY)
    body = f"<h1>mask</h1><p>The <code>mask</code> and $x$, then {LINK.format('causal-mask', 'causal mask')}."
    body += f"<p>A {LINK.format('mask', 'mask')} later, and a query.</p>"
    uses = first_uses(_page(body), terms)
    assert uses["causal mask"] == FirstUse("causal mask", uses["causal mask"].context, "term-causal-mask")
    assert uses["mask"].anchor == "term-mask", "the heading, the code and the other term's link are not uses"
    assert uses["query"].anchor is None and uses["query"].text == "query"


def test_math_captions_outputs_and_other_links_are_skipped():
    terms = glossary_terms(GLOSSARY)
    body = '<p><span class="math notranslate nohighlight">\\(query\\)</span></p>'
    body += "<figure><figcaption>a query</figcaption></figure>"
    body += '<div class="cell_output"><pre>query</pre></div><p><a href="03.html">Queries</a></p>'
    body += '<div class="admonition"><p class="admonition-title">Query</p></div>'
    assert "query" not in first_uses(_page(body), terms)
