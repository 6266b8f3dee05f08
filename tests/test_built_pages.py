"""Every page of the built book, read as HTML: what needs no browser to prove.

On every page (``_build/html``, read with BeautifulSoup):

- every image has alt text;
- the article starts with its one h1, and no heading skips a level;
- every internal link, image, script, style sheet and icon, and every font the
  page's style sheets declare, leads to a file of the site, and a link's
  #fragment to an element of its page;
- nothing the page makes a browser fetch (images, scripts, style sheets, frames,
  media, and the ``url()`` and ``@import`` of its styles and style sheets) is
  outside the site;
- a page that only sends the browser on (index.html) sends it to a page of the site;
- every chapter and homework page has a "Run in the browser" button that opens
  its own notebook in the site's JupyterLite (which ``test_browser_jupyterlite.py``
  runs in a browser).

What needs a browser (scripts running, math typeset, layout, axe-core, and these
same claims on the live page, where scripts add images, links and headings) is
proved by ``test_browser_pages.py``, on a cover of the kinds of content in the
default run and on every page with ``./course test --matrix``.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import urljoin, urlsplit

import pytest
from browser import book_pages, broken_internal_links, heading_problems, is_redirect, site_file
from bs4 import BeautifulSoup
from built_book import HTML, ROOT, built_page
from lite.markdown import notebook_path
from suite_groups import cover

PAGES = book_pages() or ["index.html"]  # no build: built_page says so
# The pages made from a notebook of the course: every chapter, every homework release.
NOTEBOOK_PAGES = sorted(
    [f"chapters/{md.stem}.html" for md in (ROOT / "chapters").glob("*.md")]
    + [f"exercises/{hw.name}/{hw.name}.html" for hw in (ROOT / "exercises").iterdir() if hw.is_dir()]
)

# A name to resolve the site's relative URLs against; no request is ever made to it.
ORIGIN = "http://built-site.invalid"

# The elements and attributes that make a browser fetch something.
FETCHED = (
    ("img", "src"),
    ("img", "srcset"),
    ("source", "src"),
    ("source", "srcset"),
    ("script", "src"),
    ("iframe", "src"),
    ("frame", "src"),
    ("video", "src"),
    ("video", "poster"),
    ("audio", "src"),
    ("track", "src"),
    ("embed", "src"),
    ("object", "data"),
    ("input", "src"),
)
# <link rel=...> that a browser fetches (canonical, alternate, next and the like it does not).
FETCHED_LINKS = {"stylesheet", "icon", "apple-touch-icon", "preload", "modulepreload", "prefetch", "manifest"}
CSS_URL = re.compile(r"""url\(\s*["']?([^"')]+?)["']?\s*\)|@import\s+["']([^"']+)["']""")
FONT_FACE = re.compile(r"@font-face\s*{[^}]*}", re.IGNORECASE)
REFRESH = re.compile(r"url=(\S+)", re.IGNORECASE)


@functools.cache
def soup_of(relative: str) -> BeautifulSoup:
    """A built page, parsed once for all the tests of this file (none changes it)."""
    return BeautifulSoup(built_page(relative), "html.parser")


def article_of(soup: BeautifulSoup):
    """The part of a page that is its own: the theme's article, else its main, else the body."""
    return soup.select_one("article.bd-article") or soup.find("main") or soup.body or soup


def page_url(relative: str) -> str:
    return f"{ORIGIN}/{relative}"


file_for = functools.partial(site_file, ORIGIN, HTML)


def outside(url: str) -> bool:
    """A URL a browser would ask another machine for."""
    return urlsplit(url).scheme not in ("", "data", "blob") or url.startswith("//")


def srcset_urls(value: str) -> list[str]:
    return [candidate.split()[0] for candidate in value.split(",") if candidate.strip()]


def fetched(soup) -> list[str]:
    """Every URL, as written, that the page's markup makes a browser fetch (style sheets of the site aside)."""
    urls = []
    for tag, attribute in FETCHED:
        for element in soup.find_all(tag, attrs={attribute: True}):
            value = element[attribute].strip()
            urls += srcset_urls(value) if attribute == "srcset" else [value]
    for link in soup.find_all("link", href=True):
        if FETCHED_LINKS & {r.lower() for r in link.get("rel", ())}:
            urls.append(link["href"].strip())
    styles = [s.get_text() for s in soup.find_all("style")] + [e["style"] for e in soup.find_all(style=True)]
    urls += [a or b for text in styles for a, b in CSS_URL.findall(text)]
    return [u for u in urls if u]


@functools.cache
def style_sheet(url: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every URL the site's style sheet at ``url`` asks for, the fonts its @font-face rules declare), absolute."""
    path = file_for(url)
    if path is None or not path.is_file():
        return (), ()
    text = path.read_text(encoding="utf-8", errors="replace")
    asked = [urljoin(url, a or b) for a, b in CSS_URL.findall(text) if not (a or b).startswith("data:")]
    fonts = [urljoin(url, a) for rule in FONT_FACE.findall(text) for a, _ in CSS_URL.findall(rule) if a]
    return tuple(asked), tuple(u for u in fonts if not u.startswith("data:"))


def style_sheets(relative: str, soup) -> list[str]:
    return [
        urljoin(page_url(relative), link["href"].strip())
        for link in soup.find_all("link", href=True)
        if "stylesheet" in link.get("rel", ())
    ]


@pytest.mark.parametrize("path", PAGES)
def test_every_image_has_alt_text(path):
    missing = [img.get("src", "")[:80] for img in soup_of(path).find_all("img") if not img.get("alt", "").strip()]
    assert not missing, f"{path}: images without alt text: {missing}"


@pytest.mark.parametrize("path", [p for p in PAGES if not is_redirect(HTML / p)])
def test_headings_start_at_one_h1_and_never_skip_a_level(path):
    headings = [
        {"level": int(h.name[1]), "text": re.sub(r"#\s*$", "", h.get_text()).strip()[:80]}
        for h in article_of(soup_of(path)).find_all(re.compile(r"^h[1-6]$"))
    ]
    problems = heading_problems(headings)
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", PAGES)
def test_every_internal_link_image_and_font_leads_somewhere(path):
    soup = soup_of(path)
    here = page_url(path)
    links = [
        a["href"].strip()
        for a in soup.find_all("a", href=True)
        if a["href"].strip() not in ("", "#") and not re.match(r"(javascript|mailto):", a["href"].strip())
    ]
    urls = [urljoin(here, u) for u in links + fetched(soup)]
    urls += [font for sheet in style_sheets(path, soup) for font in style_sheet(sheet)[1]]
    if is_redirect(HTML / path):
        refresh = soup.find("meta", attrs={"http-equiv": re.compile("^refresh$", re.IGNORECASE)})
        target = REFRESH.search(refresh["content"])
        assert target, f"{path} sends the browser on, but names no page: {refresh}"
        urls.append(urljoin(here, target[1]))
    ids = {e["id"] for e in soup.find_all(id=True)} | {e["name"] for e in soup.find_all(attrs={"name": True})}
    broken = broken_internal_links(file_for, here, ids, urls)
    assert not broken, f"{path}: internal links, images or fonts that lead nowhere:\n  " + "\n  ".join(broken)


@pytest.mark.parametrize("path", PAGES)
def test_nothing_the_page_fetches_is_outside_the_site(path):
    soup = soup_of(path)
    asked = fetched(soup) + [u for sheet in style_sheets(path, soup) for u in style_sheet(sheet)[0]]
    away = sorted({u for u in asked if outside(u) and not u.startswith(ORIGIN)})
    assert not away, f"{path} makes a browser ask another machine for: {away}"


@pytest.mark.parametrize("path", NOTEBOOK_PAGES)
def test_each_notebook_page_has_a_run_in_the_browser_button_that_opens_it(path):
    buttons = [a["href"] for a in soup_of(path).select("a.btn[href]") if "Run in the browser" in a.get_text()]
    assert buttons, f"{path} has no 'Run in the browser' button"
    notebook = notebook_path(path.removesuffix(".html"))  # a homework at the top of the drive
    for href in buttons:
        assert href.endswith(f"lite/notebooks/index.html?path={notebook}"), href
        target = file_for(urljoin(page_url(path), href))
        assert target is not None and target.is_file(), f"the button leads to {target}, which does not exist"
    assert (HTML / "lite" / "files" / notebook).is_file(), f"{notebook} is not in JupyterLite's contents"


def test_the_outside_scan_finds_a_planted_request():
    planted = BeautifulSoup(
        '<img alt="a" src="_images/a.png" srcset="_images/a.png 1x, https://cdn.example.com/a.png 2x">'
        '<link rel="stylesheet" href="//fonts.example.com/f.css"><link rel="canonical" href="https://example.com/">'
        "<style>.x { background: url('http://example.com/b.png') }</style>"
        '<div style="background: url(data:image/png;base64,AAAA)"></div>',
        "html.parser",
    )
    assert [u for u in fetched(planted) if outside(u)] == [
        "https://cdn.example.com/a.png",
        "//fonts.example.com/f.css",
        "http://example.com/b.png",
    ]


def test_the_cover_holds_every_kind_weighs_the_pages_and_drops_a_page_the_others_hold():
    kinds = {
        "explorer.html": frozenset({"math", "explorer"}),
        "quiz.html": frozenset({"math", "quiz"}),
        "both.html": frozenset({"math", "explorer", "quiz"}),
        "glossary.html": frozenset({"glossary"}),
        "plain.html": frozenset({"math"}),
    }
    assert cover(kinds) == ["both.html", "glossary.html"]
    # Weighed, two light pages cost less than one heavy one.
    weight = {"explorer.html": 1, "quiz.html": 1, "both.html": 10, "glossary.html": 1, "plain.html": 1}
    assert cover(kinds, weight) == ["explorer.html", "glossary.html", "quiz.html"]
    # The first page taken holds most, but the three taken after it hold all of it.
    kinds = {
        "a.html": frozenset({1, 2, 3}),
        "b.html": frozenset({1, 4}),
        "c.html": frozenset({2, 5}),
        "d.html": frozenset({3, 6}),
    }
    assert cover(kinds) == ["b.html", "c.html", "d.html"]
