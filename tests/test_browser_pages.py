"""The built book's pages, opened in headless Chromium with no network.

Each page is loaded from the test server on 127.0.0.1 with every other address
blocked, and must show as designed: no failed or blocked request, no console
error, all math typeset, every saved widget view rendered, and, on the live
page (where scripts add images, links and headings), every image with alt
text, every internal link, image and declared font leading somewhere, and
headings that never skip a level. What the built HTML alone proves is checked
on every page, without a browser, by ``test_built_pages.py``.

And each page passes axe-core's audit with no serious or critical violation.
axe-core (pinned in ``_ext/package-lock.json``, installed by ``npm ci``) is
injected into the settled page from the local file; nothing is fetched. Its
WCAG 2.x A/AA and best-practice rules run over the whole page: contrast,
names of controls (quizzes, cards, explorers), landmarks, keyboard access.
Moderate and minor violations do not fail the test; they are listed in
``_build/reports/axe.json`` and in pytest's closing summary.

Then the reader switches the theme to dark with its own button, and only what
depends on the theme is checked again, on the same load:

- every figure (matplotlib output, explorer) sits on a light backdrop: the
  pixels at its corners, from a screenshot of the element, are near white;
- axe-core's contrast rule finds no text, on the page or in quizzes and cards,
  below WCAG AA contrast in dark mode either;
- a quiz sits on the page's dark background (not on the light panel the theme
  gives HTML outputs), an answer typed into it keeps a contrast of 4.5:1, and
  its feedback, right and wrong, is read by axe-core too.

That the theme follows a reader's system setting, and a page opened dark
looks as one switched, is ``test_browser_dark_mode.py``'s.

The math of every page (its TeX is the page's content; the script that
typesets it is the same everywhere) is typeset in one page by the book's
MathJax, in the default run too: no TeX that does not parse, no undefined macro.

The default run opens a cover of the pages: between them they hold every kind
of content of the book, read from the built HTML (``browser.pages_by_cover``:
explorers, quizzes by kind of question, flashcards, the progress and review
pages, the glossary, the index...). Every other page is opened only by
``./course test --matrix``; a new page joins the default run when it brings a
kind no page of the cover holds.

The tests of a page look at one load of it (a fixture per page, so pytest runs
them one after the other, in the order of this file), in a browser context of
its own; the dark-mode test, last, is the one that changes the page.
"""

from __future__ import annotations

import pytest
from browser import (
    BACKDROP_FIGURES_JS,
    QUIZ_PANEL_JS,
    RAW_TEX_JS,
    book_pages,
    broken_internal_links,
    corner_luminance,
    describe_axe,
    heading_problems,
    pages_by_cover,
    record_axe,
    run_axe,
    switch_to_dark,
    typed_answer_contrast,
)

PAGES = book_pages() or ["index.html"]  # no build: the server fixture says so
FAILING = ("serious", "critical")

# Gathers what the checks need from the settled page, in one round trip.
INSPECT_JS = r"""
() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const headings = [...article.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => ({
    level: Number(h.tagName[1]),
    text: h.textContent.replace(/#\s*$/, '').trim().slice(0, 80),
  }));
  const images = [...document.querySelectorAll('img')].map((img) => ({
    src: img.getAttribute('src') || '',
    url: img.src,
    alt: (img.getAttribute('alt') || '').trim(),
  }));
  const links = [...document.querySelectorAll('a[href]')]
    .filter((a) => {
      const href = a.getAttribute('href').trim();
      return href !== '' && href !== '#' && !/^(javascript|mailto):/.test(href);
    })
    .map((a) => a.href);
  // Fonts the page's style sheets declare: a browser fetches one only when some
  // text needs it (say, when a menu opens), so check that each one exists.
  const fonts = [];
  for (const sheet of document.styleSheets) {
    let rules = [];
    try { rules = [...sheet.cssRules]; } catch (e) { continue; }
    for (const rule of rules) {
      if (!(rule instanceof CSSFontFaceRule)) continue;
      const src = rule.style.getPropertyValue('src');
      for (const m of src.matchAll(/url\(\s*["']?([^"')]+)["']?\s*\)/g)) {
        if (!m[1].startsWith('data:')) fonts.push(new URL(m[1], sheet.href || document.baseURI).href);
      }
    }
  }
  const ids = new Set();
  document.querySelectorAll('[id], [name]').forEach((e) => {
    if (e.id) ids.add(e.id);
    if (e.getAttribute('name')) ids.add(e.getAttribute('name'));
  });
  // Math: every math element from the source must hold MathJax's output.
  const mathSources = [...document.querySelectorAll('.math')];
  const untypeset = mathSources
    .filter((m) => !m.querySelector('mjx-container'))
    .map((m) => m.textContent.trim().slice(0, 80));
  const texErrors = [...document.querySelectorAll('mjx-merror')]
    .map((e) => e.getAttribute('data-mjx-error') || e.textContent);
  // The book's MathJax loads noundefined: an undefined macro shows as its name in red.
  const undefinedMacros = [...document.querySelectorAll('mjx-assistive-mml mtext[mathcolor="red"]')]
    .map((e) => e.textContent).filter((t) => t.startsWith('\\'));
  const views = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]').length;
  const renderedViews = [...document.querySelectorAll('.widget-subarea')]
    .filter((e) => e.querySelector('.jupyter-widgets, .lm-Widget')).length;
  return {
    headings, images, links, fonts, ids: [...ids], mathSources: mathSources.length,
    mathOutputs: document.querySelectorAll('mjx-container').length,
    untypeset, texErrors, undefinedMacros, views, renderedViews,
  };
}
"""


# Every math element of the given pages ([path, html]: the html, or null to fetch the page), typeset
# by the page's MathJax page by page (equation labels start afresh, as on each page). The book's
# MathJax loads the noerrors and noundefined packages: TeX that does not parse is left as it was
# written (no output), and an undefined macro is shown as its name in red (a red mtext).
TYPESET_PAGES_JS = r"""
async (pages) => {
  const article = document.querySelector('article.bd-article') || document.body;
  const found = {count: 0, errors: [], untypeset: [], undefined: []};
  for (const [path, given] of pages) {
    const html = given === null ? await (await fetch('/' + path)).text() : given;
    const box = document.createElement('div');
    for (const m of new DOMParser().parseFromString(html, 'text/html').querySelectorAll('.math')) {
      if (!m.parentElement || !m.parentElement.closest('.math')) box.append(document.importNode(m, true));
    }
    if (!box.children.length) continue;
    article.append(box);
    MathJax.texReset();
    await MathJax.typesetPromise([box]);
    found.count += box.children.length;
    for (const e of box.querySelectorAll('mjx-merror')) {
      found.errors.push(`${path}: ${e.getAttribute('data-mjx-error') || e.textContent}`);
    }
    for (const e of box.querySelectorAll('mjx-assistive-mml mtext[mathcolor="red"]')) {
      if (e.textContent.startsWith('\\')) found.undefined.push(`${path}: ${e.textContent}`);
    }
    for (const m of box.children) {
      if (!m.querySelector('mjx-container')) found.untypeset.push(`${path}: ${m.textContent.trim().slice(0, 80)}`);
    }
    MathJax.typesetClear([box]);
    box.remove();
  }
  return found;
}
"""
# A control for the sweep: TeX that does not parse, and an undefined macro.
PLANTED_MATH = r'<span class="math">\(\frac{1}{\)</span><span class="math">\(\undefinedmacro x\)</span>'


@pytest.fixture(scope="module", params=pages_by_cover(PAGES))
def settled_page(request, book_browser):
    """(path, page, log): the page opened and settled, in a context of its own.

    Module-scoped and parametrized by page: pytest runs every test of one page,
    then closes it and opens the next. Only the last one, in dark mode, changes the page."""
    context = book_browser.new_context()
    try:
        page, log = book_browser.open(context, request.param)
        yield request.param, page, log
    finally:
        context.close()


def test_page_shows_as_designed_offline(settled_page, site_server):
    path, page, log = settled_page
    seen = page.evaluate(INSPECT_JS)

    problems = log.problems()
    problems += [f"math not typeset: {t!r}" for t in seen["untypeset"]]
    problems += [f"TeX error from MathJax: {t!r}" for t in seen["texErrors"]]
    problems += [f"undefined TeX macro: {t!r}" for t in seen["undefinedMacros"]]
    problems += [f"raw TeX in the page's text: {t!r}" for t in page.evaluate(RAW_TEX_JS)]
    if seen["mathSources"] and not seen["mathOutputs"]:
        problems.append(f"{seen['mathSources']} math elements but no MathJax output")
    if seen["renderedViews"] != seen["views"]:
        problems.append(f"{seen['renderedViews']} of {seen['views']} saved widget views rendered")
    problems += [f"image without alt text: {img['src']}" for img in seen["images"] if not img["alt"]]
    problems += heading_problems(seen["headings"])
    urls = seen["links"] + [img["url"] for img in seen["images"]] + seen["fonts"]
    problems += [
        f"internal link, image or font that leads nowhere: {u}"
        for u in broken_internal_links(site_server.file_for, page.url, set(seen["ids"]), urls)
    ]
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


def test_no_serious_or_critical_axe_violation(settled_page):
    path, page, _ = settled_page
    violations = run_axe(page)
    record_axe(path, "light", violations)
    failing = [v for v in violations if v["impact"] in FAILING]
    assert not failing, f"{path}: axe-core finds\n{describe_axe(failing)}"


def test_in_dark_mode_figures_keep_a_light_backdrop_and_text_its_contrast(settled_page):
    path, page, log = settled_page
    switch_to_dark(page)
    assert page.evaluate("document.documentElement.dataset.theme") == "dark", (
        "the theme's button did not switch the page to dark"
    )
    problems = []
    for index in page.evaluate(BACKDROP_FIGURES_JS):
        figure = page.locator(f'img[data-dark-check="{index}"]')
        figure.scroll_into_view_if_needed()
        light = corner_luminance(figure.screenshot())
        if light < 0.8:
            problems.append(f"figure {index} ({figure.get_attribute('alt')[:60]!r}): corner luminance {light:.2f}")
    if page.locator(".Quiz").count():
        panel = page.evaluate(QUIZ_PANEL_JS)
        if panel > 0.2:
            problems.append(f"the quiz sits on a light panel (luminance {panel:.2f})")
        # Answered, a quiz shows its feedback in green or red: axe-core reads it below.
        page.locator(".Quiz label.MCButton[data-correct=true]").first.click()
    if page.locator(".Quiz input.Input-text").count():
        typing, marked = typed_answer_contrast(page)
        if not (typing and typing >= 4.5 and marked and marked >= 4.5):
            problems.append(f"a typed quiz answer has contrast {typing} (typing), {marked} (marked)")
    violations = run_axe(page, ["color-contrast"])
    record_axe(path, "dark", violations)
    if violations:
        problems.append("axe-core, dark mode:\n" + describe_axe(violations))
    assert not problems, f"{path} in dark mode:\n  " + "\n  ".join(problems)
    assert not log.problems(), "\n".join(log.problems())


def test_the_math_of_every_page_typesets_without_a_tex_error(open_page):
    """Every page's math, typeset in one page by the book's MathJax: what the page test proves of
    its cover's math in place, for the math of every page (TeX is the content; its typesetting
    is the same script on every page)."""
    page, log = open_page("intro.html")
    found = page.evaluate(TYPESET_PAGES_JS, [[p, None] for p in PAGES])
    assert found["count"] > 100, f"only {found['count']} math elements found in the book's pages"
    problems = [f"TeX error from MathJax: {e}" for e in found["errors"]]
    problems += [f"math not typeset (TeX that does not parse): {m}" for m in found["untypeset"]]
    problems += [f"undefined TeX macro: {m}" for m in found["undefined"]]
    problems += log.problems()
    assert not problems, "\n  ".join(["the pages' math:", *problems])
    planted = page.evaluate(TYPESET_PAGES_JS, [["planted", PLANTED_MATH]])
    assert (planted["untypeset"], planted["undefined"]) == (
        ["planted: \\(\\frac{1}{\\)"],
        ["planted: \\undefinedmacro"],
    ), f"the sweep does not find broken TeX: {planted}"
