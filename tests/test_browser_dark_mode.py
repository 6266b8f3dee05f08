"""Dark mode: figures, heatmaps, explorers, quizzes and cards stay readable.

The theme follows the reader's system setting (``default_mode: auto``): each
page is opened with the browser asking for a dark colour scheme, and the
theme's own switch (``data-theme`` on ``<html>``) is checked to be dark. Then:

- every figure (matplotlib output, explorer) sits on a light backdrop: the
  pixels at its corners, from a screenshot of the element, are near white;
- axe-core's contrast rule finds no text, on the page or in quizzes and cards,
  below WCAG AA contrast in dark mode either;
- a quiz sits on the page's dark background (not on the light panel the theme
  gives HTML outputs), an answer typed into it keeps a contrast of 4.5:1, and
  its feedback, right and wrong, is read by axe-core too.

Screenshots of a chapter in both themes go to ``_build/screenshots/`` for a
person to look at.
"""

from __future__ import annotations

import io

import pytest
from browser import SCREENSHOTS, book_pages, describe_axe, record_axe, run_axe, typed_answer_contrast

CHAPTERS = [p for p in book_pages() if p.startswith("chapters/")] or ["chapters/00_welcome.html"]

# Figures the checks look at: images in cell outputs and explorers, in view.
FIGURES_JS = """
() => [...document.querySelectorAll('.bd-content .cell_output img, .bd-content .explorer img')]
  .filter((img) => img.getClientRects().length > 0 && img.naturalWidth > 0)
  .map((img, i) => { img.dataset.darkCheck = String(i); return i; })
"""


# The luminance of the first opaque background behind the first quiz question.
QUIZ_PANEL_JS = """
() => {
  for (let e = document.querySelector('.Quiz').parentElement; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
    if (c.length === 3 || c[3] === 1) {
      const [r, g, b] = c.slice(0, 3).map((v) => {
        v /= 255;
        return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    }
  }
  return 0;
}
"""


def luminance(pixel: tuple[int, ...]) -> float:
    """Relative luminance (WCAG) of an sRGB pixel, 0 (black) to 1 (white)."""
    channels = []
    for value in pixel[:3]:
        c = value / 255
        channels.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def corner_luminance(png: bytes) -> float:
    """The darkest of the four corner pixels (just inside the element's border)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    w, h = image.size
    inset = 3
    corners = [(inset, inset), (w - 1 - inset, inset), (inset, h - 1 - inset), (w - 1 - inset, h - 1 - inset)]
    return min(luminance(image.getpixel(c)) for c in corners)


@pytest.fixture
def dark_page(book_browser):
    """open(path) -> a settled page in a browser that prefers a dark colour scheme."""
    context = book_browser.new_context(color_scheme="dark")

    def _open(path: str):
        page, log = book_browser.open(context, path)
        assert page.evaluate("document.documentElement.dataset.theme") == "dark", (
            "the theme did not switch to dark for a reader whose system prefers it"
        )
        return page, log

    try:
        yield _open
    finally:
        context.close()


@pytest.mark.parametrize("path", CHAPTERS)
def test_figures_keep_a_light_backdrop_and_text_its_contrast_in_dark_mode(dark_page, path):
    page, log = dark_page(path)
    problems = []
    for index in page.evaluate(FIGURES_JS):
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


def test_screenshots_of_a_chapter_in_both_themes(book_browser):
    """A heatmap, an explorer, a quiz and a card in light and dark, side by side for a person."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = "chapters/06_causal_masking.html"
    seen = {}
    for scheme in ("light", "dark"):
        context = book_browser.new_context(color_scheme=scheme)
        try:
            page, _ = book_browser.open(context, path)
            assert page.evaluate("document.documentElement.dataset.theme") == scheme
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
