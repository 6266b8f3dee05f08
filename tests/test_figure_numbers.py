"""Figures are numbered per chapter in the built book (_ext/figure_numbers.py).

Chapter N's figures read "Fig. N.1", "Fig. N.2", ... in the order of the page
(N from the page's file name, chapters/NN_name; the welcome page is chapter 0),
every {numref} to a figure reads the number of that figure's caption, and the
titles carry no section numbers.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
from built_book import HTML, ROOT, built_page

sys.path.insert(0, str(ROOT / "_ext"))
from figure_numbers import renumber_per_chapter, restore_sphinx_numbers  # noqa: E402

CHAPTERS = sorted(p.relative_to(HTML).as_posix() for p in HTML.glob("chapters/*.html"))


class _Numbers(HTMLParser):
    """The caption numbers of a page's figures, in order, and the text of its numrefs."""

    def __init__(self) -> None:
        super().__init__()
        self.figure_ids: list[str] = []
        self.captions: dict[str, str] = {}
        self.numrefs: list[tuple[str, str]] = []  # (target id, text)
        self.section_numbers = 0
        self._open: list[tuple[str, str]] = []  # (what, key) of the spans being read
        self._text: dict[tuple[str, str], str] = {}
        self._href = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "figure" and a.get("id"):
            self.figure_ids.append(a["id"])
        if tag == "a":
            self._href = a.get("href", "")
        if tag == "span":
            if "section-number" in classes:
                self.section_numbers += 1
            if "caption-number" in classes and self.figure_ids:
                self._open.append(("caption", self.figure_ids[-1]))
            elif "std-numref" in classes:
                self._open.append(("numref", self._href))
            else:
                self._open.append(("", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._href = ""
        if tag == "span" and self._open:
            what, key = self._open.pop()
            text = " ".join(self._text.pop((what, key), "").split())
            if what == "caption":
                self.captions[key] = text
            elif what == "numref":
                self.numrefs.append((key.partition("#")[2], text))

    def handle_data(self, data: str) -> None:
        for what, key in self._open:
            if what:
                self._text[(what, key)] = self._text.get((what, key), "") + data


def numbers_of(path: str) -> _Numbers:
    parser = _Numbers()
    parser.feed(built_page(path))
    return parser


def test_there_are_chapters_with_figures():
    chapter_4 = [path for path in CHAPTERS if path.startswith("chapters/04_")]
    assert len(chapter_4) == 1, CHAPTERS  # the tests below run on every built chapter: the book is built
    assert numbers_of(chapter_4[0]).captions, "chapter 4 shows no numbered figure"


@pytest.mark.parametrize("path", CHAPTERS)
def test_figures_are_numbered_within_their_chapter(path):
    chapter = int(re.match(r"chapters/(\d+)_", path).group(1))
    found = numbers_of(path)
    numbered = [found.captions[i] for i in found.figure_ids if i in found.captions]
    assert numbered == [f"Fig. {chapter}.{k}" for k in range(1, len(numbered) + 1)]


@pytest.mark.parametrize("path", CHAPTERS)
def test_a_reference_to_a_figure_reads_its_caption_number(path):
    found = numbers_of(path)
    for target, text in found.numrefs:
        if target in found.captions:
            assert text == found.captions[target], f"{path}: a reference to {target} reads {text!r}"


@pytest.mark.parametrize("path", CHAPTERS)
def test_titles_carry_no_section_numbers(path):
    assert numbers_of(path).section_numbers == 0


def test_a_build_with_nothing_changed_rewrites_no_page_for_its_figure_numbers():
    # What Sphinx counts, book-wide, on each build of an unchanged book.
    def sphinx_counts(env):
        old = env.toc_fignumbers
        env.toc_fignumbers = {
            "chapters/00_welcome": {},
            "chapters/01_a": {"figure": {"f1": (1,)}},
            "chapters/04_b": {"figure": {"g2": (3,), "g1": (2,)}, "displaymath": {"e": (1,)}},
        }
        return [d for d, numbers in env.toc_fignumbers.items() if numbers != old.get(d)]

    env = SimpleNamespace(toc_fignumbers={})
    rewritten = []
    for _ in range(2):
        restore_sphinx_numbers(None, env)
        by_sphinx = sphinx_counts(env)
        by_us = renumber_per_chapter(None, env)
        rewritten.append(sorted(set(by_sphinx) | set(by_us)))
    assert env.toc_fignumbers == {
        "chapters/00_welcome": {},
        "chapters/01_a": {"figure": {"f1": (1, 1)}},
        "chapters/04_b": {"figure": {"g1": (4, 1), "g2": (4, 2)}, "displaymath": {"e": (1,)}},
    }
    assert rewritten == [["chapters/00_welcome", "chapters/01_a", "chapters/04_b"], []]
