"""The whole book as one PDF, printed by the system Chromium, offline.

Run by ``./course pdf`` after the book is built::

    python _ext/book_pdf.py [--site _build/html] [--out _build/pdf/book.pdf]

The built site is served on 127.0.0.1 (nothing else is reachable: Chromium's
resolver maps every other host to "not found" and Playwright aborts any other
request). One print document is put together in the browser from the pages in
the order of ``_toc.yml``: a title page with a table of contents, then each
page's article. On the way:

- ids are made unique per page, and every link to another page of the book
  becomes a link inside the PDF (to the page or to the heading it names);
  links to files of the site that are not pages (downloads, the in-browser
  Jupyter) lose their address, since a PDF cannot open them;
- interactive parts are left out (widget views, whose static figure is kept
  beside them; quiz and flashcard scripts; header and copy buttons), so are
  the theme's print-only page header and table of contents, and folded parts
  (dropdowns) are opened;
- MathJax (the site's own copy) typesets the math of the whole document.

Chromium then prints it to A4 with ``outline`` (bookmarks from the headings:
one per chapter, with its sections below) and ``tagged`` (a tagged PDF).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
PRINT_PAGE = "__book_print__.html"  # served from memory at the site root, never written

# Put the book together in the page (runs in the browser; see the module docstring).
ASSEMBLE_JS = r"""
async ({pages, title, author}) => {
  const slug = (p) => p.replace(/\.html$/, '').replace(/[^A-Za-z0-9]+/g, '-');
  const inBook = new Map(pages.map((p) => [new URL(p, location.href).pathname, slug(p)]));
  const book = document.createElement('div');
  book.id = 'book';
  const cover = document.createElement('section');
  cover.className = 'print-cover';
  cover.innerHTML = `<h1 class="print-title"></h1><p class="print-author"></p>` +
    `<p class="print-toc-title">Contents</p><ol class="print-toc"></ol>`;
  cover.querySelector('.print-title').textContent = title;
  cover.querySelector('.print-author').textContent = author;
  book.appendChild(cover);
  const toc = cover.querySelector('.print-toc');
  for (const page of pages) {
    const url = new URL(page, location.href);
    const html = await (await fetch(url)).text();
    const doc = new DOMParser().parseFromString(html, 'text/html');
    const article = doc.querySelector('article.bd-article');
    if (!article) throw new Error(`${page}: no article element`);
    const me = slug(page);
    article.querySelectorAll(
      'script, style, #jb-print-docs-body, .headerlink, .copybtn, .toggle-button, ' +
      '.cell_output:has(> .output > .jupyter-widgets), .jupyter-widgets, ' +
      '.output_area:empty, .Quiz, .flip-container').forEach((e) => e.remove());
    article.querySelectorAll('details').forEach((d) => d.setAttribute('open', ''));
    article.querySelectorAll('[id]').forEach((e) => { e.id = `${me}--${e.id}`; });
    article.querySelectorAll('a[href]').forEach((a) => {
      const target = new URL(a.getAttribute('href'), url);
      if (target.origin !== location.origin) return;
      const other = inBook.get(target.pathname);
      if (other) {
        const frag = decodeURIComponent(target.hash.slice(1));
        a.setAttribute('href', frag ? `#${other}--${frag}` : `#${other}`);
      } else {
        a.removeAttribute('href');  // a file of the site: nothing a PDF can open
      }
    });
    article.querySelectorAll('img[src]').forEach((img) => {
      img.src = new URL(img.getAttribute('src'), url).href;
      img.removeAttribute('loading');
    });
    const section = document.createElement('section');
    section.className = 'print-page';
    section.id = me;
    section.append(...article.childNodes);
    book.appendChild(section);
    const h1 = section.querySelector('h1');
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = `#${me}`;
    a.textContent = h1 ? h1.textContent.trim() : page;
    li.appendChild(a);
    toc.appendChild(li);
  }
  document.body.replaceChildren(book);
  await Promise.all([...document.images].map((img) =>
    img.complete ? null : new Promise((r) => { img.onload = img.onerror = r; })));
  if (window.MathJax && MathJax.startup) {
    await MathJax.startup.promise;
    await MathJax.typesetPromise([book]);
  }
  await document.fonts.ready;
  const headings = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => {
    const copy = h.cloneNode(true);  // the text a reader sees, math as its speech-free glyphs
    copy.querySelectorAll('mjx-assistive-mml').forEach((e) => e.remove());
    return copy.textContent.replace(/\s+/g, ' ').trim();
  });
  // Prose that still holds TeX (a formula MathJax left untypeset); code may hold TeX in strings.
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight';
  const tex = /\\(?:frac|sqrt|mathrm|top)\{|\\\(|\\\[/;
  const walker = document.createTreeWalker(book, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement.closest(skip) || !tex.test(node.data)
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const rawTex = [];
  while (walker.nextNode()) rawTex.push(walker.currentNode.data.trim().slice(0, 120));
  return {pages: pages.length, images: document.images.length,
          math: document.querySelectorAll('mjx-container').length, headings,
          raw_tex: rawTex, tex_errors: document.querySelectorAll('mjx-merror').length};
}
"""

PRINT_CSS = """
@page { size: A4; margin: 18mm 16mm 18mm 16mm; }
html, body { background: white !important; }
body { font-size: 10.5pt; }
#book { max-width: none; padding: 0; }
.print-cover { break-after: page; padding-top: 30mm; }
.print-title { font-size: 26pt; }
.print-toc-title { margin-top: 20mm; font-weight: bold; }
.print-page { break-before: page; }
.print-page h1 { font-size: 20pt; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
pre, .highlight, figure, img, table, .admonition, .math { break-inside: avoid; }
img { max-width: 100% !important; height: auto; }
a { color: #0645ad; }
"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def book_pages(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """The site's pages in reading order (root, then every part's chapters)."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return [f"{f}.html" for f in files]


def print_page_html(site: Path, root_page: str) -> str:
    """A page with the site's head (styles, MathJax and its settings) and an empty body."""
    html = (site / root_page).read_text(encoding="utf-8")
    head = html[html.index("<head>") : html.index("</head>") + len("</head>")]
    head = head.replace("</head>", f"<style>{PRINT_CSS}</style></head>")
    return f'<!DOCTYPE html><html lang="en">{head}<body></body></html>'


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("book_pdf: needs Chromium (Debian: apt-get install -y chromium)")


def make_pdf(site: Path, out: Path, browser: Any = None) -> dict:
    """Print the built site to out; returns figures about it.

    ``browser`` is a running Playwright Chromium to use (the tests pass theirs);
    without it the system Chromium is started and closed here.
    """
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    pages = book_pages()
    missing = [p for p in pages if not (site / p).is_file()]
    if missing:
        raise SystemExit(f"book_pdf: {site} lacks {missing[:3]}: build the book first (./course build)")
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    origin = f"http://127.0.0.1:{httpd.server_port}"
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    blocked: list[str] = []
    started = time.monotonic()

    def route(r: Any) -> None:
        url = r.request.url
        if url == f"{origin}/{PRINT_PAGE}":
            r.fulfill(status=200, content_type="text/html", body=print_page_html(site, pages[0]))
        elif url.startswith(origin + "/") or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            blocked.append(url)
            r.abort("blockedbyclient")

    def print_with(chromium: Any) -> dict:
        context = chromium.new_context()
        try:
            context.route("**/*", route)
            page = context.new_page()
            page.emulate_media(media="print")
            page.goto(f"{origin}/{PRINT_PAGE}", wait_until="load")
            stats = page.evaluate(
                ASSEMBLE_JS,
                {"pages": pages, "title": config.get("title", ""), "author": config.get("author", "")},
            )
            out.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(
                path=str(out),
                format="A4",
                print_background=True,
                outline=True,
                tagged=True,
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=(
                    '<div style="font-size:8pt;width:100%;text-align:center;color:#555">'
                    '<span class="pageNumber"></span></div>'
                ),
                margin={"top": "16mm", "bottom": "18mm", "left": "16mm", "right": "16mm"},
            )
            return stats
        finally:
            context.close()

    try:
        if browser is not None:
            stats = print_with(browser)
        else:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as pw:
                own = pw.chromium.launch(executable_path=find_chromium(), headless=True, args=CHROMIUM_FLAGS)
                try:
                    stats = print_with(own)
                finally:
                    own.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    retitle_outline(out, stats.pop("headings"))
    stats.update(seconds=round(time.monotonic() - started, 1), blocked=blocked, bytes=out.stat().st_size)
    return stats


def retitle_outline(pdf: Path, headings: list[str]) -> None:
    """Give each bookmark the text of its heading.

    Chromium builds the outline from the headings, in document order, but with
    the site's styles it repeats the first line of a heading in its bookmark
    ("WelcomeWelcome"). The headings' own text, taken in the page, replaces it.
    """
    from pypdf import PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    writer = PdfWriter(clone_from=str(pdf))
    outlines = writer.root_object.get("/Outlines")
    items = []

    def walk(node: Any) -> None:
        while node is not None:
            node = node.get_object()
            items.append(node)
            walk(node.get("/First"))
            node = node.get("/Next")

    walk(outlines.get_object().get("/First") if outlines is not None else None)
    if len(items) != len(headings):
        raise SystemExit(f"book_pdf: the PDF has {len(items)} bookmarks for {len(headings)} headings")
    for item, title in zip(items, headings):
        item[NameObject("/Title")] = TextStringObject(title)
    with pdf.open("wb") as f:
        writer.write(f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print the built book to one PDF.")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "book.pdf")
    args = parser.parse_args(argv)
    stats = make_pdf(args.site.resolve(), args.out.resolve())
    if stats["blocked"]:
        print(f"book_pdf: requests outside the machine were blocked: {stats['blocked'][:5]}", file=sys.stderr)
        return 1
    if stats["raw_tex"] or stats["tex_errors"]:
        print(
            f"book_pdf: {len(stats['raw_tex'])} passages of untypeset TeX and {stats['tex_errors']} TeX errors "
            f"in the print: {stats['raw_tex'][:5]}",
            file=sys.stderr,
        )
        return 1
    from pypdf import PdfReader

    pages = len(PdfReader(args.out).pages)
    print(
        f"book_pdf: {args.out} ({stats['bytes'] / 1e6:.1f} MB, {pages} PDF pages from "
        f"{stats['pages']} book pages, {stats['math']} formulas, {stats['images']} images, "
        f"{stats['seconds']} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
