"""The search page in headless Chromium, offline: the chapter that teaches a
term comes first, and the results' summaries read as text, not TeX source.

The ranking and the summaries come from ``_ext/search_results.py``.
"""

from __future__ import annotations

import re

# TeX as it would show through a summary: a command (\mathrm, \top), a delimiter
# (\( \[), a line break (\\) or a spacing command (\, \ ). The book's prose has no
# backslash of its own, so a summary has none at all.
TEX_COMMAND = re.compile(r"\\")

ALL_SUMMARIES_JS = """
() => {
  const items = [...document.querySelectorAll('#search-results ul.search li')];
  return items.length > 0 && items.every((li) => li.querySelector('p.context'));
}
"""


def search(open_page, words: str):
    """The search page for ``words``, once every result shows its summary."""
    page, log = open_page(f"search.html?q={words}")
    page.wait_for_selector("#search-results ul.search li")
    page.wait_for_function(ALL_SUMMARIES_JS)
    results = page.eval_on_selector_all(
        "#search-results ul.search li",
        """(lis) => lis.map((li) => ({
             href: li.querySelector('a').getAttribute('href'),
             summary: li.querySelector('p.context').textContent}))""",
    )
    return page, log, results


def test_searching_logit_lists_chapter_1_first_with_readable_summaries(open_page):
    page, log, results = search(open_page, "logit")
    pages = [r["href"].split("#")[0] for r in results]
    assert pages[0] == "chapters/01_self_attention.html", f"searching 'logit' ranks first: {pages}"
    assert "appendix/notation.html" in pages, f"the glossary is not among the results: {pages}"
    assert "logit" in results[0]["summary"].lower(), f"chapter 1's summary misses the word: {results[0]['summary']!r}"
    raw = [f"{r['href']}: {r['summary']!r}" for r in results if TEX_COMMAND.search(r["summary"])]
    assert not raw, "summaries that show TeX source:\n" + "\n".join(raw)
    assert not log.problems(), log.problems()


def test_a_summary_of_a_formula_is_written_out_as_text(open_page):
    page, log, results = search(open_page, "softmax")
    assert len(results) >= 5, f"searching 'softmax' found {len(results)} pages"
    raw = [f"{r['href']}: {r['summary']!r}" for r in results if TEX_COMMAND.search(r["summary"])]
    assert not raw, "summaries that show TeX source:\n" + "\n".join(raw)
    # The page's own conversion, on a formula of chapter 4 (the TeX that showed through before).
    formula = r"\(a_{ij} = \mathrm{softmax}_j(\tilde s_{ij}), \qquad o_i = \sum_j a_{ij} v_j \sqrt{d_k}\)"
    html = f'<main role="main"><p>weights <span class="math">{formula}</span></p></main>'
    text = page.evaluate("(html) => Search.htmlToText(html)", html)
    assert " ".join(text.split()) == "weights a_ij = softmax_j(s_ij), o_i = Σ_j a_ij v_j √d_k"
    assert not log.problems(), log.problems()
