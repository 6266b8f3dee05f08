"""Figures are numbered per chapter: chapter 4's figures are Fig. 4.1, 4.2, ...

Sphinx numbers figures per chapter only under a numbered toctree, which would
also number every title ("4. Scaled dot-product attention", "4.2 ..."); without
one it counts figures on through the whole book (chapter 4's first figure would
be numbered after every figure of chapters 0 to 3). This extension keeps the
titles as they are and renumbers each page's figures (and tables and code
listings with captions) after Sphinx has counted them: a page
``chapters/NN_name`` is chapter NN (the welcome page is chapter 0), and its
k-th figure, in the order of the page, is NN.k. A page outside chapters/
numbers its own figures 1, 2, ... The caption and every {numref} to the figure
read the new number.

Sphinx rewrites a page whose figure numbers changed since the last build; it
compares with the numbers it counted itself, so they are kept aside
(``env.course_book_fignumbers``) and put back before it counts again: a build
with nothing changed rewrites nothing.
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

# What Sphinx numbers (``numfig_format``); equations keep their own numbers.
RENUMBERED = ("figure", "table", "code-block")
CHAPTER = re.compile(r"^chapters/(\d+)_")

FigNumbers = dict[str, dict[str, dict[str, tuple[int, ...]]]]


def chapter_of(docname: str) -> int | None:
    """The chapter number of a page, from its file name; None outside chapters/.

    >>> chapter_of("chapters/04_scaled_dot_product_attention"), chapter_of("chapters/00_welcome")
    (4, 0)
    >>> chapter_of("appendix/notation") is None
    True
    """
    found = CHAPTER.match(docname)
    return int(found.group(1)) if found else None


def per_chapter(numbers: FigNumbers) -> FigNumbers:
    """Sphinx's book-wide numbers, renumbered from 1 on each page, under its chapter.

    >>> per_chapter({"chapters/04_x": {"figure": {"b": (8,), "a": (7,)}, "displaymath": {"e": (1,)}}})
    {'chapters/04_x': {'figure': {'a': (4, 1), 'b': (4, 2)}, 'displaymath': {'e': (1,)}}}
    >>> per_chapter({"appendix/notation": {"table": {"t": (3,)}}})
    {'appendix/notation': {'table': {'t': (1,)}}}
    """
    renumbered: FigNumbers = {}
    for docname, by_type in numbers.items():
        chapter = chapter_of(docname)
        prefix = () if chapter is None else (chapter,)
        renumbered[docname] = {}
        for figtype, ids in by_type.items():
            if figtype not in RENUMBERED:
                renumbered[docname][figtype] = dict(ids)
                continue
            in_page_order = sorted(ids, key=lambda name: ids[name])
            renumbered[docname][figtype] = {name: (*prefix, k) for k, name in enumerate(in_page_order, start=1)}
    return renumbered


def restore_sphinx_numbers(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Before Sphinx counts: give it back its own numbers of the last build to compare with."""
    kept = getattr(env, "course_book_fignumbers", None)
    env.course_chapter_fignumbers = env.toc_fignumbers  # type: ignore[attr-defined]
    if kept is not None:
        env.toc_fignumbers = kept
    return []


def renumber_per_chapter(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """After Sphinx counts: keep its numbers aside and number per chapter.

    Returns the pages whose per-chapter numbers changed (to be written again).
    """
    env.course_book_fignumbers = env.toc_fignumbers  # type: ignore[attr-defined]
    previous: FigNumbers = getattr(env, "course_chapter_fignumbers", {})
    env.toc_fignumbers = per_chapter(env.toc_fignumbers)
    return [docname for docname, numbers in env.toc_fignumbers.items() if numbers != previous.get(docname)]


def setup(app: Sphinx) -> dict[str, Any]:
    # Sphinx's own counting (TocTreeCollector) runs at the default priority, 500.
    app.connect("env-get-updated", restore_sphinx_numbers, priority=100)
    app.connect("env-get-updated", renumber_per_chapter, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
