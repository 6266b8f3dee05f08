"""Every relative link of the README and of ``docs/*.md`` leads to a file or folder of the repository.

The links are read with markdown-it (the parser under MyST), so a link inside
code is not one and a link written across lines is found whole. A link with a
scheme (``https:``) or to an anchor of the same page is not checked here; a
link to a path of the machine (absolute, or with ``~``) is an error, since the
repository must not name one.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def link_targets(text: str) -> list[str]:
    """Every link's and image's target in a Markdown text, in order."""
    found = []
    for block in MarkdownIt("commonmark").parse(text):
        for token in block.children or []:
            if token.type == "link_open":
                found.append(str(token.attrGet("href")))
            elif token.type == "image":
                found.append(str(token.attrGet("src")))
    return found


def relative_targets(text: str) -> list[str]:
    return [t for t in link_targets(text) if not urlsplit(t).scheme and not t.startswith("#")]


def test_the_link_reader_finds_links_and_images_but_not_code():
    text = "See [the guide](docs/a.md#top), ![a figure](img/b.png) and\n[a link\nacross lines](c/).\n\n"
    text += "`[not a link](x.md)`, [outside](https://example.org) and [here](#anchor).\n\n    [indented code](y.md)\n"
    assert link_targets(text) == ["docs/a.md#top", "img/b.png", "c/", "https://example.org", "#anchor"]
    assert relative_targets(text) == ["docs/a.md#top", "img/b.png", "c/"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file_of_the_repository(page):
    broken = []
    for target in relative_targets(page.read_text(encoding="utf-8")):
        path = unquote(urlsplit(target).path)
        if path.startswith(("/", "~")):
            broken.append(f"{target} (a path of this machine, not of the repository)")
        elif path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links that lead nowhere: {broken}"


def test_the_readme_links_to_the_guides_and_the_benchmark_page():
    targets = relative_targets((ROOT / "README.md").read_text(encoding="utf-8"))
    for guide in ("docs/developers.md", "docs/benchmarks.md", "solution_book/guide_term.md"):
        assert guide in targets, guide
