"""Dark mode: the theme follows the reader's system setting, and a page switched
to dark is the page opened dark.

The theme follows the reader's system setting (``default_mode: auto``): a
chapter opened with the browser asking for a dark (or light) colour scheme has
the theme's switch (``data-theme`` on ``<html>``) on dark (or light).

A reader may also switch with the theme's button, and ``test_browser_pages.py``
checks each page in dark mode that way, on the same load as its light checks
(figures on a light backdrop, contrast, quizzes): this file proves that a page
switched so has every element coloured as in the page opened dark.

Screenshots of a chapter in both themes go to ``_build/screenshots/`` for a
person to look at.
"""

from __future__ import annotations

from collections import Counter

from browser import SCREENSHOTS, corner_luminance, switch_to_dark

# A chapter with a heatmap, an explorer, a quiz and flashcards.
CHAPTER = "chapters/06_causal_masking.html"

# Every element's computed colours (text, background, border, outline, fill, stroke).
COLOURS_JS = """
() => [...document.querySelectorAll('body *')].map((e) => {
  const s = getComputedStyle(e);
  return [e.tagName, s.color, s.backgroundColor, s.borderTopColor, s.borderBottomColor,
    s.outlineColor, s.fill, s.stroke].join(' ');
})
"""


def test_screenshots_of_a_chapter_in_both_themes(book_browser):
    """A heatmap, an explorer, a quiz and a card in light and dark, side by side for a person."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    seen = {}
    for scheme in ("light", "dark"):
        context = book_browser.new_context(color_scheme=scheme)
        try:
            page, _ = book_browser.open(context, CHAPTER)
            assert page.evaluate("document.documentElement.dataset.theme") == scheme, (
                f"the theme did not follow a reader whose system prefers {scheme}"
            )
            for name, selector in (("explorer", ".explorer"), ("quiz", ".Quiz"), ("cards", ".flip-container")):
                element = page.locator(selector).first
                element.scroll_into_view_if_needed()
                shot = element.screenshot(path=str(SCREENSHOTS / f"{scheme}-ch6-{name}.png"))
                seen[(scheme, name)] = shot
            explorer_figure = page.locator(".explorer img").first.screenshot()
            seen[(scheme, "figure-corner")] = corner_luminance(explorer_figure)
        finally:
            context.close()
    # The figure is the same light picture in both themes; the page around it is not.
    assert seen[("dark", "figure-corner")] > 0.8 and seen[("light", "figure-corner")] > 0.8
    assert seen[("dark", "explorer")] != seen[("light", "explorer")]


def test_a_page_switched_to_dark_is_coloured_as_the_page_opened_dark(book_browser):
    colours = {}
    for how, scheme in (("opened dark", "dark"), ("switched", "light")):
        context = book_browser.new_context(color_scheme=scheme)
        try:
            page, log = book_browser.open(context, CHAPTER)
            if how == "switched":
                light = Counter(page.evaluate(COLOURS_JS))
                switch_to_dark(page)
            assert page.evaluate("document.documentElement.dataset.theme") == "dark", how
            # A multiset: the quiz shuffles its answers on every load.
            colours[how] = Counter(page.evaluate(COLOURS_JS))
            assert not log.problems(), "\n".join(log.problems())
        finally:
            context.close()
    assert colours["switched"] != light, "the theme's button changed no colour on the page"
    opened, switched = colours["opened dark"], colours["switched"]
    differ = sorted((opened - switched) + (switched - opened))
    assert opened == switched, f"{CHAPTER}: colours that differ between the page opened dark and switched:\n" + (
        "\n".join(differ[:20])
    )
