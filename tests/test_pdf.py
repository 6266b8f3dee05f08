"""The whole book as one PDF (``./course pdf``), printed by the tests' Chromium, offline.

The PDF is made once per run from the built site (``_ext/book_pdf.py``), with
the browser of the browser tests (skipped with them when Chromium is missing),
and read back with pypdf: its page count, its outline (the chapters in the
order of ``_toc.yml``, titles from the sources), typeset formulas, and links.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser import HTML, ROOT

TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def _book_pdf_module() -> Any:
    spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "_ext" / "book_pdf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toc_files() -> list[str]:
    return [TOC["root"]] + [ch["file"] for part in TOC["parts"] for ch in part["chapters"]]


def source_title(file: str) -> str:
    """The first heading of a page's source (MyST markdown or a notebook's first markdown cell)."""
    md = ROOT / f"{file}.md"
    if md.is_file():
        text = md.read_text(encoding="utf-8")
    else:
        nb = json.loads((ROOT / f"{file}.ipynb").read_text(encoding="utf-8"))
        text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return re.search(r"^# (.+)$", text, re.MULTILINE).group(1).strip()


# Sphinx's smartquotes print a typed apostrophe or quote as its typographic form.
TYPOGRAPHIC = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def words_before_math(title: str) -> str:
    """The words of a title before any math ($...$) or markup, to compare with the PDF's text."""
    return " ".join(re.split(r"\$|`", title, maxsplit=1)[0].split()).translate(TYPOGRAPHIC)


@pytest.fixture(scope="module")
def book_pdf(book_browser, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pdf") / "book.pdf"
    stats = _book_pdf_module().make_pdf(HTML, out, browser=book_browser.browser)
    return out, stats


@pytest.fixture(scope="module")
def reader(book_pdf):
    from pypdf import PdfReader

    return PdfReader(book_pdf[0])


def test_the_pdf_was_made_offline_from_every_page(book_pdf, reader):
    _, stats = book_pdf
    assert stats["blocked"] == [], f"printing asked for outside addresses: {stats['blocked'][:5]}"
    assert stats["pages"] == len(toc_files())
    # A plausible length: at least a page per book page plus the cover, and not a
    # runaway layout (a long chapter prints to a few dozen A4 pages at most).
    assert len(toc_files()) + 1 <= len(reader.pages) <= 40 * len(toc_files()), len(reader.pages)
    assert stats["images"] >= 10, "the book's figures are missing from the print"


def test_the_outline_lists_the_chapters_in_order(reader):
    top = [entry.title for entry in reader.outline if not isinstance(entry, list)]
    # The cover's title comes first, then one entry per page of the book.
    expected = [words_before_math(source_title(f)) for f in toc_files()]
    got = [" ".join(t.split()).translate(TYPOGRAPHIC) for t in top[1:]]
    assert len(got) == len(expected), f"outline has {len(got)} page entries, the book {len(expected)}: {got}"
    for title, want in zip(got, expected):
        assert title.startswith(want), f"outline entry {title!r} should be the page titled {want!r}"
    assert any(isinstance(entry, list) and entry for entry in reader.outline), "no section entries under the chapters"


def test_formulas_are_typeset_not_raw_tex(book_pdf, reader):
    # The book's first display formula, softmax(Q K^T / sqrt(d_k)) V, as typeset glyphs in the PDF's text.
    text = "\n".join(page.extract_text() for page in reader.pages[:4])
    assert "softmax" in text
    assert re.search(r"softmax\s*\(\s*QK\s*⊤", text), "the attention formula is not typeset"
    assert "√" in text
    # No TeX left in the prose of any page, read from the page that was printed (its code is left out:
    # plot titles hold TeX in Python strings): cheaper than the PDF's text, and the same words.
    _, stats = book_pdf
    assert stats["math"] > 100
    assert stats["raw_tex"] == [] and stats["tex_errors"] == 0, f"untypeset TeX in the print: {stats['raw_tex'][:5]}"


def test_internal_links_lead_to_a_destination(reader):
    names = set(reader.named_destinations)
    internal, outside = [], []
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") != "/Link":
                continue
            action = annot.get("/A")
            if action is not None and action.get("/S") == "/URI":
                outside.append(str(action["/URI"]))
            else:
                internal.append(str(annot.get("/Dest") or (action or {}).get("/D")))
    assert len(internal) >= len(toc_files()), (
        f"only {len(internal)} internal links (the contents alone has {len(toc_files())})"
    )
    dangling = sorted({d for d in internal if d not in names})
    assert not dangling, f"links to no destination: {dangling[:5]}"
    local = [u for u in outside if re.match(r"https?://(127\.|localhost)", u)]
    assert not local, f"links to the print server left in the PDF: {local[:5]}"
