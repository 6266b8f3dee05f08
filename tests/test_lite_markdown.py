"""The in-browser notebooks' Markdown: MyST roles and directives made into what JupyterLab renders.

``lite.markdown`` (in ``_ext/``) on sample text with hand-made targets (the
expected Markdown written out here), pybtex's reading of a small bibliography,
and the book's own pages: after conversion no markdown cell of any page holds a
raw role or directive fence, and a homework's links to chapters lead to their
notebooks. A small page built by Sphinx with myst-nb shows that a glued value
reaches the notebook as the built page formats it.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from built_book import HTML
from lite.contents import lite_notebooks
from lite.markdown import (
    Citation,
    MystConversionError,
    Targets,
    caption_numbers,
    notebook_path,
    read_citations,
    read_targets,
    to_markdown,
)
from lite.places import LiteBuildError
from myst_page import myst_page

ROOT = Path(__file__).resolve().parents[1]

# What a converted cell may not hold: a role, or the fence of a directive.
RAW_ROLE = re.compile(r"\{[a-zA-Z][\w:+-]*\}`")
RAW_DIRECTIVE = re.compile(r"^\s*(`{3,}|:{3,})\{", re.MULTILINE)


@pytest.fixture
def targets() -> Targets:
    return Targets(
        docs={
            "chapters/01_a": "One",
            "chapters/03_queries_keys_values": "Queries, keys and values",
            "appendix/notation": "Notation and glossary",
        },
        labels={"fig-a": ("chapters/01_a", "fig-a", "A long caption"), "sec-b": ("appendix/notation", "sec-b", "B")},
        terms={"logit": "appendix/notation"},
        numbers={"fig-a": "Fig. 4"},
        citations={"vaswani2017attention": Citation("Vaswani et al.", "2017"), "x2020": Citation("X and Y", "2020")},
        glue={"chapters/01_a": {"count": {"text/plain": "15"}, "ratio": {"text/plain": "0.71159"}}},
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "See {doc}`03_queries_keys_values` next.",
            "See [Queries, keys and values](03_queries_keys_values.ipynb) next.",
        ),
        ("Read {doc}`the symbols <../appendix/notation>`.", "Read [the symbols](../appendix/notation.ipynb)."),
        ("As {cite:p}`vaswani2017attention` show.", "As (Vaswani et al., 2017) show."),
        ("{cite:t}`vaswani2017attention` wrote it.", "Vaswani et al. (2017) wrote it."),
        ("Two: {cite:p}`vaswani2017attention,x2020`.", "Two: (Vaswani et al., 2017; X and Y, 2020)."),
        ("{numref}`fig-a` shows it.", "[Fig. 4](01_a.ipynb#fig-a) shows it."),
        ("See {ref}`sec-b`.", "See [B](../appendix/notation.ipynb#sec-b)."),
        ("A {term}`logit` is a score.", "A [logit](../appendix/notation.ipynb) is a score."),
        ("Many {term}`logits <logit>`.", "Many [logits](../appendix/notation.ipynb)."),
        ("An {abbr}`SDPA (scaled dot-product attention)` call.", "An SDPA (scaled dot-product attention) call."),
        ("Code `{doc}` stays, {math}`x^2` is math.", "Code `{doc}` stays, $x^2$ is math."),
        ("(sec-b)=\n# Title\n% a comment\nText.", "# Title\nText."),
        ("$$\nx = 1\n$$ (eq-one)", "$$\nx = 1\n$$"),
        ("{glue:text}`count:d` of them, ratio {glue:text}`ratio:.2f`.", "15 of them, ratio 0.71."),
        ("As {glue}`count`, unformatted {glue:text}`ratio`.", "As 15, unformatted 0.71159."),
        ("Back to [the start](01_a.md#fig-a).", "Back to [the start](01_a.ipynb#fig-a)."),
        ("See [notation](../appendix/notation.md).", "See [notation](../appendix/notation.ipynb)."),
        (
            "A [site](https://example.org/a.md) and `[x](y.md)` stay.",
            "A [site](https://example.org/a.md) and `[x](y.md)` stay.",
        ),
    ],
)
def test_roles_become_links_citations_and_text(targets, source, expected):
    assert to_markdown(source, targets, "chapters/01_a") == expected


def test_an_admonition_becomes_a_quote_with_its_title(targets):
    source = ":::{admonition} Predict, then check\n:class: predict\nWhat will {doc}`01_a` print?\n:::"
    assert to_markdown(source, targets, "chapters/01_a") == (
        "> **Predict, then check**\n>\n> What will [One](01_a.ipynb) print?"
    )


def test_a_note_without_title_is_titled_by_its_kind(targets):
    assert (
        to_markdown("```{note}\nMind the shape.\n```", targets, "chapters/01_a") == "> **Note**\n>\n> Mind the shape."
    )


def test_a_dropdown_stays_closed_and_nested_directives_are_converted(targets):
    source = "::::{dropdown} Answer\n:::{tip}\nInside.\n:::\n```python\nprint(1)\n```\n::::\nAfter."
    assert to_markdown(source, targets, "chapters/01_a") == (
        "<details><summary>Answer</summary>\n\n\n> **Tip**\n>\n> Inside.\n\n"
        "```python\nprint(1)\n```\n\n</details>\n\nAfter."
    )


def test_a_directive_with_no_markdown_body_says_the_page_shows_it(targets):
    out = to_markdown("```{literalinclude} ../data.json\n:language: json\n```", targets, "chapters/01_a")
    assert out == "*This part (literalinclude) is shown on the book's page, One.*"


def test_roles_inside_code_blocks_are_left_alone(targets):
    source = "```md\nWrite {doc}`01_a` in MyST.\n```"
    assert to_markdown(source, targets, "chapters/01_a") == source


@pytest.mark.parametrize(
    "source",
    [
        "{doc}`02_missing`",
        "{cite:p}`nobody1999`",
        "{term}`unknown`",
        "{numref}`fig-missing`",
        ":::{note}\nopen",
        "{glue:text}`never_glued:d`",
        "[gone](02_missing.md)",
    ],
)
def test_what_the_book_does_not_have_is_a_clear_error(targets, source):
    with pytest.raises(MystConversionError, match=r"chapters/01_a|never closed"):
        to_markdown(source, targets, "chapters/01_a")


def test_citations_read_by_pybtex_in_author_year_form(tmp_path):
    bib = tmp_path / "refs.bib"
    bib.write_text(
        "@article{one, author = {Curie, Marie}, title = {T}, year = {1903}}\n"
        "@article{two, author = {Knuth, Donald and Lamport, Leslie}, title = {T}, year = {1984}}\n"
        "@article{many, author = {Kaiser, {\\L}ukasz and B, C and D, E}, title = {T}, year = {2017}}\n",
        encoding="utf-8",
    )
    assert read_citations(bib) == {
        "one": Citation("Curie", "1903"),
        "two": Citation("Knuth and Lamport", "1984"),
        "many": Citation("Kaiser et al.", "2017"),
    }


def test_the_books_own_pages_convert_with_no_raw_role_or_directive():
    """Every markdown cell of every page, with the targets of the built site."""
    import jupytext

    if not (HTML / "objects.inv").is_file():
        pytest.fail("_build/html/objects.inv does not exist: build the book first (./course build)")
    targets = read_targets(HTML, [ROOT / "references.bib"])
    assert targets.citations["vaswani2017attention"] == Citation("Vaswani et al.", "2017")
    raw = []
    for md in sorted([*(ROOT / "chapters").glob("*.md"), *(ROOT / "appendix").glob("*.md")]):
        docname = md.relative_to(ROOT).with_suffix("").as_posix()
        for cell in jupytext.read(md, fmt="md:myst").cells:
            if cell.cell_type != "markdown":
                continue
            out = to_markdown(cell.source, targets, docname)
            raw += [f"{docname}: {m.group(0)!r} in {out[:80]!r}" for m in RAW_ROLE.finditer(out)]
            raw += [f"{docname}: {m.group(0)!r} in {out[:80]!r}" for m in RAW_DIRECTIVE.finditer(out)]
    assert not raw, "raw MyST left after conversion:\n" + "\n".join(raw[:20])


def test_figure_numbers_are_read_from_the_figure_that_has_the_id():
    html = (
        '<section id="s"><figure id="a"><p>no caption</p></figure>'
        '<figure class="align-default" id="b"><figcaption><p><span class="caption-number">Fig. 2 </span>'
        "</p></figcaption></figure>"
        '<table class="table" id="t"><caption><span class="caption-number">Table 1 </span></caption></table></section>'
    )
    assert caption_numbers(html) == {"b": "Fig. 2", "t": "Table 1"}


def test_a_homework_sits_at_the_top_of_the_drive_and_links_to_chapters_from_there(targets):
    """JupyterLite's Download names a file after its whole path: a homework's path is its own file name."""
    assert notebook_path("exercises/hw4_x/hw4_x") == "hw4_x.ipynb"
    assert notebook_path("chapters/01_a") == "chapters/01_a.ipynb"
    source = "Read [Chapter 1](../../chapters/01_a.md) and {doc}`../../appendix/notation`."
    assert to_markdown(source, targets, "exercises/hw4_x/hw4_x") == (
        "Read [Chapter 1](chapters/01_a.ipynb) and [Notation and glossary](appendix/notation.ipynb)."
    )


GLUING_PAGE = myst_page(
    "A page that glues",
    "from myst_nb import glue\nglue('count', 15)\nglue('ratio', 0.711594)\nglue('masked_entries', 6 * 5 // 2)",
) + (
    "\nThe mask hides {glue:text}`masked_entries:d` entries; {glue:text}`count:d` of them,"
    " ratio {glue:text}`ratio:.2f`, as {glue}`count`.\n"
)


@pytest.fixture(scope="module")
def glued_book(tmp_path_factory) -> tuple[Path, Path]:
    """A course folder with one chapter that glues three values, built by Sphinx with
    myst-nb as the book is (its executed notebooks and their glue beside the site)."""
    root = tmp_path_factory.mktemp("course")
    (root / "chapters").mkdir()
    (root / "chapters" / "01_a.md").write_text(GLUING_PAGE, encoding="utf-8")
    (root / "index.md").write_text("# Book\n\n```{toctree}\nchapters/01_a\n```\n", encoding="utf-8")
    (root / "conf.py").write_text("extensions = ['myst_nb']\nnb_execution_mode = 'force'\n", encoding="utf-8")
    site = root / "_build" / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", str(root), str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root, site


def test_a_glued_value_is_pasted_into_the_notebook_as_the_built_page_formats_it(glued_book):
    """The values myst-nb stored when it ran the page, formatted as each role asks,
    in place of the role (not the role's text, "masked_entries:d")."""
    root, site = glued_book
    notebook = nbformat.reads(lite_notebooks(read_targets(site, []), root)["chapters/01_a.ipynb"], as_version=4)
    markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    assert markdown[-1] == f"The mask hides {6 * 5 // 2} entries; 15 of them, ratio {0.711594:.2f}, as 15."


def test_the_same_page_gives_the_same_notebook_byte_for_byte(glued_book):
    """JupyterLite's doit copies a notebook again when its bytes change: two builds
    from the same page must not differ (jupytext alone would draw new cell ids)."""
    root, site = glued_book
    targets = read_targets(site, [])
    assert lite_notebooks(targets, root) == lite_notebooks(targets, root)


def test_a_role_naming_a_value_the_page_never_glued_stops_the_build_naming_it(glued_book):
    root, site = glued_book
    page = root / "chapters" / "01_a.md"
    page.write_text(GLUING_PAGE + "\nAnd {glue:text}`never_glued:.2f`.\n", encoding="utf-8")
    try:
        with pytest.raises(LiteBuildError, match=r"chapters/01_a\.md: .*'never_glued'.*'count', 'masked_entries'"):
            lite_notebooks(read_targets(site, []), root)
    finally:
        page.write_text(GLUING_PAGE, encoding="utf-8")


def test_every_link_of_a_homework_to_a_page_leads_to_a_notebook_of_the_drive():
    """The homework links to its chapter by the chapter's source file; in the browser
    that file is not there, its notebook is."""
    if not (HTML / "objects.inv").is_file():
        pytest.fail("_build/html/objects.inv does not exist: build the book first (./course build)")
    targets = read_targets(HTML, [ROOT / "references.bib"])
    drive = {notebook_path(name) for name in targets.docs}
    links = []
    for release in sorted((ROOT / "exercises").glob("*/*.ipynb")):
        docname = release.relative_to(ROOT).with_suffix("").as_posix()
        here = posixpath.dirname(notebook_path(docname))
        for cell in nbformat.read(release, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for target in re.findall(r"\]\(([^)#\s]+\.(?:md|ipynb))", to_markdown(cell.source, targets, docname)):
                links.append((docname, target, posixpath.normpath(posixpath.join(here, target))))
    assert any("04_scaled_dot_product_attention" in target for _, target, _ in links), links
    broken = [(doc, target) for doc, target, path in links if path not in drive]
    assert not broken, f"links to files the in-browser Jupyter does not hold: {broken}"
