"""Every page of the built book, opened in headless Chromium with no network.

Each page is loaded from the test server on 127.0.0.1 with every other address
blocked, and must show as designed: no failed or blocked request, no console
error, all math typeset, every saved widget view rendered, every image with
alt text, every internal link, image and declared font leading somewhere, and
headings that never skip a level.

And each page passes axe-core's audit with no serious or critical violation.
axe-core (pinned in ``_ext/package-lock.json``, installed by ``npm ci``) is
injected into the settled page from the local file; nothing is fetched. Its
WCAG 2.x A/AA and best-practice rules run over the whole page: contrast,
names of controls (quizzes, cards, explorers), landmarks, keyboard access.
Moderate and minor violations do not fail the test; they are listed in
``_build/reports/axe.json`` and in pytest's closing summary.

Both tests of a page look at one load of it (a fixture per page, so pytest
runs them one after the other), in a browser context of its own.
"""

from __future__ import annotations

import pytest
from browser import RAW_TEX_JS, book_pages, broken_internal_links, describe_axe, record_axe, run_axe

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
  const views = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]').length;
  const renderedViews = [...document.querySelectorAll('.widget-subarea')]
    .filter((e) => e.querySelector('.jupyter-widgets, .lm-Widget')).length;
  return {
    headings, images, links, fonts, ids: [...ids], mathSources: mathSources.length,
    mathOutputs: document.querySelectorAll('mjx-container').length,
    untypeset, texErrors, views, renderedViews,
  };
}
"""


def heading_problems(headings: list[dict]) -> list[str]:
    """The article starts with its one h1, and no heading goes down more than one level."""
    if not headings:
        return ["the page has no heading"]
    problems = []
    if headings[0]["level"] != 1:
        problems.append(f"first heading is h{headings[0]['level']} ({headings[0]['text']!r}), not h1")
    h1s = [h["text"] for h in headings if h["level"] == 1]
    if len(h1s) > 1:
        problems.append(f"{len(h1s)} h1 headings: {h1s}")
    for before, after in zip(headings, headings[1:]):
        if after["level"] > before["level"] + 1:
            problems.append(
                f"h{before['level']} {before['text']!r} is followed by h{after['level']} "
                f"{after['text']!r} (skips a level)"
            )
    return problems


@pytest.fixture(scope="module", params=PAGES)
def settled_page(request, book_browser):
    """(path, page, log): the page opened and settled, in a context of its own.

    Module-scoped and parametrized by page: pytest runs every test of one page,
    then closes it and opens the next. Neither test changes the page."""
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
        for u in broken_internal_links(site_server, page.url, set(seen["ids"]), urls)
    ]
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


def test_no_serious_or_critical_axe_violation(settled_page):
    path, page, _ = settled_page
    violations = run_axe(page)
    record_axe(path, "light", violations)
    failing = [v for v in violations if v["impact"] in FAILING]
    assert not failing, f"{path}: axe-core finds\n{describe_axe(failing)}"
