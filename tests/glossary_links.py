"""Where a built page first uses each glossary term, and whether that use links
to the term's glossary entry.

What counts as the page's prose: the text of its article, except

- headings, and the titles of admonitions and dropdowns (a title is not where
  a learner meets a word, and a link there would be a link in a title);
- code (``pre``, ``code``, cell inputs) and cell outputs, which include the
  quizzes and flashcards;
- math (elements of class ``math``, typeset by MathJax);
- figure captions (a code cell's figure takes its caption from the cell's
  metadata, which is not prose);
- the text of a link that is not a glossary link (a cross-reference or a
  citation cannot hold a second link), and the bibliography.

How a term is matched: without regard to case, as whole words (a hyphen joins
words, so "head" is not found in "multi-head"), with a plural ending (-s, -es,
or -y → -ies); a qualifier in parentheses in the glossary ("warm-up (learning
rate)") is not part of what is matched. A match inside the link of another
glossary term ("mask" inside a linked "causal mask") is not a use of the
shorter term.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
BLOCK = {"p", "li", "div", "td", "th", "dt", "dd", "section", "table", "tr", "ul", "ol", "blockquote", "figure"}
SKIPPED_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "figcaption", "summary", "script", "style"}
SKIPPED_CLASSES = {
    "cell_input",
    "cell_output",
    "math",
    "admonition-title",
    "sd-summary-title",
    "bibliography",
    "citation",
    "headerlink",
}
GLOSSARY_PAGE = "notation.html#"


@dataclass(frozen=True)
class Span:
    """One piece of text and where it sits: skipped, or inside a link to ``href``."""

    text: str
    skipped: bool
    href: str | None


class _ArticleText(HTMLParser):
    """The text of a page's ``<article>``, in pieces, each marked as skipped or
    linked (see the module's docstring for what is skipped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, str | None]] = []
        self.spans: list[Span] = []
        self.inside = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "article":
            self.inside += 1
        if tag in VOID:
            if tag == "br":
                self._add("\n")
            return
        classes = set((attributes.get("class") or "").split())
        skipped, href = (self.stack[-1][1], self.stack[-1][2]) if self.stack else (False, None)
        skipped = skipped or tag in SKIPPED_TAGS or bool(classes & SKIPPED_CLASSES)
        if tag == "a":
            href = attributes.get("href") or ""
            if GLOSSARY_PAGE not in href:
                skipped = True
        if tag in BLOCK:
            self._add("\n")
        self.stack.append((tag, skipped, href))

    def handle_endtag(self, tag):
        if tag == "article":
            self.inside -= 1
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                break
        if tag in BLOCK:
            self._add("\n")

    def handle_data(self, data):
        self._add(data)

    def _add(self, text: str) -> None:
        if not self.inside:
            return
        skipped, href = (self.stack[-1][1], self.stack[-1][2]) if self.stack else (False, None)
        self.spans.append(Span(text, skipped, href))


class _GlossaryTerms(HTMLParser):
    """The glossary's terms and their anchors: ``<dt id="term-...">term</dt>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.terms: dict[str, str] = {}
        self._current: str | None = None
        self._text = ""
        self._in_headerlink = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "dt" and (attributes.get("id") or "").startswith("term-"):
            self._current, self._text = attributes["id"], ""
        if tag == "a" and "headerlink" in (attributes.get("class") or ""):
            self._in_headerlink = True

    def handle_endtag(self, tag):
        if tag == "a":
            self._in_headerlink = False
        if tag == "dt" and self._current:
            self.terms[" ".join(self._text.split())] = self._current
            self._current = None

    def handle_data(self, data):
        if self._current and not self._in_headerlink:
            self._text += data


def glossary_terms(glossary_html: str) -> dict[str, str]:
    """Each glossary term of the built glossary page, with its anchor id."""
    parser = _GlossaryTerms()
    parser.feed(glossary_html)
    return parser.terms


def term_pattern(term: str) -> re.Pattern[str]:
    """How a term is found in prose (see the module's docstring)."""
    words = re.sub(r"\s*\([^)]*\)", "", term).split()
    body = r"\s+".join(re.escape(w) for w in words)
    body = body[:-1] + "(?:y|ies)" if re.search(r"[^aeiou]y$", words[-1]) else body + "(?:s|es)?"
    return re.compile(r"(?<![\w-])" + body + r"(?![\w-])", re.IGNORECASE)


@dataclass(frozen=True)
class FirstUse:
    """The first use of a term on a page: its text, the text around it, and the
    anchor it links to (``None``: not a glossary link)."""

    text: str
    context: str
    anchor: str | None


def first_uses(page_html: str, terms: dict[str, str]) -> dict[str, FirstUse]:
    """For each term used in the page's prose, its first use there."""
    parser = _ArticleText()
    parser.feed(page_html)
    text = "".join(s.text for s in parser.spans)
    owner: list[Span] = [s for s in parser.spans for _ in s.text]
    found: dict[str, FirstUse] = {}
    for term, anchor in terms.items():
        for match in term_pattern(term).finditer(text):
            spans = owner[match.start() : match.end()]
            if any(s.skipped for s in spans):
                continue
            hrefs = {s.href for s in spans}
            linked = hrefs.pop() if len(hrefs) == 1 else None
            target = linked.rsplit("#", 1)[1] if linked else None
            if target is not None and target != anchor:
                continue  # inside the link of another term
            context = " ".join(text[max(0, match.start() - 60) : match.end() + 40].split())
            found[term] = FirstUse(match.group(0), context, target)
            break
    return found
