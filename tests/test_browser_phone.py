"""Every chapter on a phone (390 px wide): its layout.

Each chapter page (the welcome page and the landing page too) is opened at the width of a phone held
upright, and must:

- fit the screen: no element reaches past either edge of the screen unless it
  is inside a box that scrolls sideways and itself fits (wide equations,
  tables and code scroll in their own box; the page never does);
- show that such a box scrolls: while there is more to see on the right, the
  box's frame draws its cue on that edge (_static/scroll_cues.js, course.css),
  and the keyboard can reach the box;
- keep every floating (position: fixed) element, such as the theme's "Back to
  top" button, off the text, at several places down the page;
- offer a "Full size" button under each figure shown smaller than it was drawn
  (_static/figure_zoom.js);
- show its quiz and flashcard text rendered: no Markdown marks (``**``,
  backticks) and no TeX command (``\\frac``) left as text.

Layout does not depend on the colour scheme, so a chapter is opened once, in
light; axe-core's full audit runs once per page on the desktop, and its
contrast rule in dark mode (both in ``test_browser_pages.py``). Layout depends
on the kinds of content a page holds (wide equations, tables, figures, quizzes,
explorers): the default run opens a cover of the chapters that between them
hold every kind (``browser.pages_by_cover``), ``./course test --matrix`` every
chapter.

And the "Full size" button of chapter 1's first figure works with the keyboard
alone: Enter opens the figure at its own size in a dialog, Escape closes it and
gives the focus back to the button.
"""

from __future__ import annotations

import pytest
from browser import DRAWN_JS, PHONE, book_pages, describe_axe, pages_by_cover, run_axe

# The chapters, and the landing page (it opens with the book's formula).
CHAPTERS = [p for p in book_pages() if p.startswith("chapters/") or p == "intro.html"] or ["chapters/00_welcome.html"]
THEMES = ("light", "dark")
FAILING = ("serious", "critical")

# Elements that reach past an edge of the screen and are not inside a box that
# scrolls sideways and fits on the screen.
OVERFLOW_JS = r"""
() => {
  const width = document.documentElement.clientWidth;
  const fits = (r) => r.left >= -1 && r.right <= width + 1;
  const scrolls = (el) => /^(auto|scroll)$/.test(getComputedStyle(el).overflowX);
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + [...el.classList].slice(0, 3).map((c) => '.' + c).join('');
  const offenders = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2 || fits(r)) continue;
    // MathJax's copy of the math for screen readers is clipped to nothing on screen.
    if (getComputedStyle(el).visibility === 'hidden' || el.closest('mjx-assistive-mml')) continue;
    let box = el.parentElement;
    while (box && box !== document.body && !scrolls(box)) box = box.parentElement;
    if (box && box !== document.body && fits(box.getBoundingClientRect())) continue;
    offenders.push(`${name(el)} spans ${Math.round(r.left)} to ${Math.round(r.right)} px`);
  }
  return {pageWidth: document.documentElement.scrollWidth, width, offenders};
}
"""

# Boxes in the article that scroll sideways, at their left end: is the cue on
# their right edge drawn, and can the keyboard reach them?
SCROLL_BOXES_JS = r"""
() => [...document.querySelectorAll('.bd-article *')]
  .filter((el) => /^(auto|scroll)$/.test(getComputedStyle(el).overflowX)
    && el.scrollWidth > el.clientWidth + 1 && el.getClientRects().length > 0)
  .map((el) => {
    el.scrollLeft = 0;
    const frame = el.closest('.scroll-frame');
    const focusable = el.tabIndex >= 0 || el.querySelector('a[href], button, input, select, textarea, [tabindex]');
    return {
      box: el.tagName.toLowerCase() + '.' + [...el.classList].join('.') + ': '
        + el.textContent.replace(/\s+/g, ' ').trim().slice(0, 50),
      cue: frame ? getComputedStyle(frame, '::after').opacity : 'no frame',
      focusable: Boolean(focusable),
    };
  })
"""

# Scrolls down the page, and back up a little at each stop (the theme shows
# its "Back to top" button when the reader scrolls up), and lists every
# floating element on screen that covers text of the article.
FLOATING_JS = (
    r"""
async () => {
  // The theme shows or hides its button in a scroll handler: DRAWN_JS waits
  // until that is on screen and any transition it started has ended.
  const drawn = """
    + DRAWN_JS.strip()
    + r""";
  const article = document.querySelector('.bd-article');
  const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const found = [];
  const height = document.documentElement.scrollHeight;
  for (const stop of [0.25, 0.5, 0.75, 1]) {
    window.scrollTo(0, stop * (height - innerHeight));
    await drawn();
    window.scrollBy(0, -300);
    await drawn();
    const floating = [...document.querySelectorAll('body *')].filter((el) => {
      const s = getComputedStyle(el);
      const r = el.getBoundingClientRect();
      return s.position === 'fixed' && s.visibility !== 'hidden' && Number(s.opacity) > 0
        && r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < innerHeight;
    });
    if (!floating.length) continue;
    const text = [];
    const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (!node.data.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) {
        if (r.bottom > 0 && r.top < innerHeight) text.push([r, node.data.trim().slice(0, 30)]);
      }
    }
    for (const el of floating) {
      const box = el.getBoundingClientRect();
      const covered = text.filter(([r]) => overlaps(box, r)).map(([, words]) => words);
      if (covered.length) {
        found.push(`${el.tagName.toLowerCase()}#${el.id} (${el.textContent.trim().slice(0, 20)}) `
          + `at ${Math.round(stop * 100)}% covers: ${covered.slice(0, 3).join(' | ')}`);
      }
    }
  }
  window.scrollTo(0, 0);
  return found;
}
"""
)

# Figures shown smaller than drawn, and whether their "Full size" button shows.
FIGURES_JS = r"""
() => [...document.querySelectorAll('.bd-article figure img')]
  .filter((img) => img.getClientRects().length > 0 && !img.closest('.explorer'))
  .filter((img) => img.naturalWidth > img.clientWidth * 1.15)
  .map((img) => {
    const button = img.nextElementSibling;
    const shown = Boolean(button && button.matches('button.figure-zoom-button')
      && button.getClientRects().length > 0);
    return {alt: img.alt.slice(0, 60), shown};
  })
"""


# Quiz and flashcard text on screen that still shows Markdown or TeX source.
RAW_STUDY_TEXT_JS = r"""
() => [...document.querySelectorAll('.Quiz, .flip-container')]
  .map((el) => el.innerText)
  .filter((text) => /\*\*|`|\\[A-Za-z]+/.test(text))
  .map((text) => text.replace(/\s+/g, ' ').slice(0, 120))
"""


@pytest.fixture
def phone(book_browser):
    """open(path, theme) -> a settled page on a 390 px screen in that colour scheme."""
    contexts = []

    def _open(path: str, theme: str):
        context = book_browser.new_context(viewport=PHONE, color_scheme=theme)
        contexts.append(context)
        page, log = book_browser.open(context, path)
        assert page.evaluate("document.documentElement.dataset.theme") == theme
        return page, log

    try:
        yield _open
    finally:
        for context in contexts:
            context.close()


@pytest.mark.parametrize("path", pages_by_cover(CHAPTERS))
def test_a_chapter_fits_a_phone(phone, path):
    page, log = phone(path, "light")
    problems = []

    fit = page.evaluate(OVERFLOW_JS)
    if fit["pageWidth"] > fit["width"]:
        problems.append(f"the page is {fit['pageWidth']} px wide on a {fit['width']} px screen")
    problems += [f"past the edge of the screen: {o}" for o in fit["offenders"][:10]]

    for box in page.evaluate(SCROLL_BOXES_JS):
        if box["cue"] != "1":
            problems.append(f"a box that scrolls shows no cue on its right edge ({box['cue']}): {box['box']}")
        if not box["focusable"]:
            problems.append(f"a box that scrolls cannot be reached by the keyboard: {box['box']}")

    problems += [f"a floating element covers text: {f}" for f in page.evaluate(FLOATING_JS)]

    problems += [
        f"a shrunken figure has no Full size button: {f['alt']}" for f in page.evaluate(FIGURES_JS) if not f["shown"]
    ]

    problems += [f"quiz or flashcard text left raw: {t!r}" for t in page.evaluate(RAW_STUDY_TEXT_JS)]

    problems += log.problems()
    assert not problems, f"{path} at 390 px:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("theme", THEMES)
def test_a_figure_opens_at_full_size_from_the_keyboard(phone, theme):
    page, log = phone("chapters/01_self_attention.html", theme)
    figure = page.locator("#fig-ch1-weights")
    img = figure.locator("img").first
    button = figure.locator("button.figure-zoom-button")
    assert button.is_visible(), "chapter 1's first figure has no visible Full size button on a phone"
    assert button.get_attribute("aria-label") == "Full size: Fig. 1.1"
    shown = img.evaluate("(img) => [img.clientWidth, img.naturalWidth]")
    assert shown[0] <= PHONE["width"] < shown[1], f"the figure is not shrunk on a phone: {shown}"

    button.focus()
    page.keyboard.press("Enter")
    dialog = page.locator("dialog.figure-zoom")
    assert dialog.evaluate("(d) => d.open"), "Enter on the button did not open the figure"
    assert page.evaluate("document.activeElement.closest('dialog.figure-zoom') !== null"), "the focus is not in it"
    assert dialog.get_attribute("aria-labelledby") == "figure-zoom-title"
    assert page.locator("#figure-zoom-title").inner_text() == "Fig. 1.1 at full size"
    big = dialog.locator("img")
    assert big.get_attribute("alt") == img.get_attribute("alt")
    width = big.evaluate("(img) => img.complete ? img.getBoundingClientRect().width : -1")
    assert width == pytest.approx(shown[1], abs=1), "the figure in the dialog is not at its own size"
    violations = run_axe(page)
    failing = [v for v in violations if v["impact"] in FAILING]
    assert not failing, describe_axe(failing)

    page.keyboard.press("Escape")
    assert not dialog.evaluate("(d) => d.open"), "Escape did not close the figure"
    assert page.evaluate("document.activeElement.classList.contains('figure-zoom-button')"), (
        "closing did not give the focus back to the button"
    )
    assert not log.problems(), "\n".join(log.problems())
