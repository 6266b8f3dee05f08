"""The quizzes, the flashcards and the search box as a reader meets them, in headless Chromium.

The flashcards' check mark and cross are named buttons with a tooltip that the
keyboard can press, and "Next >" stays on one line; quiz text shows its
Markdown rendered (no ``**`` or backticks), a numeric question that rounds
says to how many significant digits, a typed answer keeps its contrast, and
the arrow keys move between a question's options (with a visible focus ring)
without answering it; a page shows one search box, on a laptop and on a
phone. Expected texts come from the quiz and card files.
"""

from __future__ import annotations

import re

import pytest
from browser import DRAWN_JS, ROOT, read_json, typed_answer_contrast

CHAPTERS = ROOT / "chapters"
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 900}


def chapter_with(suffix: str, pattern: str = "") -> str:
    """The first chapter page whose ``<chapter><suffix>`` file exists (and contains the pattern)."""
    for source in sorted(CHAPTERS.glob(f"*{suffix}")):
        if re.search(pattern, source.read_text(encoding="utf-8")):
            return f"chapters/{source.name.removesuffix(suffix)}.html"
    pytest.fail(f"no chapter has a {suffix} file matching {pattern!r}")


def open_at(book_browser, path: str, viewport: dict):
    context = book_browser.new_context()
    page, log = book_browser.open(context, path)
    page.set_viewport_size(viewport)
    return context, page, log


# --------------------------------------------------------------------------- flashcards


def test_flashcard_marks_are_named_buttons_with_tooltips(open_page):
    page, log = open_page(chapter_with(".cards.json"))
    deck = page.locator(".flip-container").first
    deck.scroll_into_view_if_needed()
    card = deck.locator(".flipper.frontcard")
    names = {}
    for mark in ("flashcardKnown", "flashcardNotKnown"):
        icon = card.locator(f".{mark}")
        icon.wait_for(state="attached")
        page.wait_for_function(f"() => document.querySelector('.{mark}').getAttribute('role') === 'button'")
        name = icon.get_attribute("aria-label") or ""
        assert len(name.split()) >= 2, f"{mark}: aria-label {name!r}"
        assert icon.get_attribute("title") == name, f"{mark}: the tooltip says something else than the name"
        assert icon.get_attribute("tabindex") == "0", f"{mark} cannot be reached with the keyboard"
        names[mark] = name
    assert names["flashcardKnown"] != names["flashcardNotKnown"]

    # Enter on the focused cross does what a click does: the next card comes in.
    first = card.get_attribute("data-seq-num")
    card.locator(".flashcardNotKnown").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(seq) => { const c = document.querySelector('.flip-container .flipper.frontcard');"
        " return c && c.dataset.seqNum !== seq; }",
        arg=first,
    )
    assert not log.problems(), log.problems()


# Where the keyboard's focus is: in a flashcard deck, on a formula, in the page's
# footer (the links to the previous and next chapter, or the theme's footer).
FOCUS_JS = """() => {
  const a = document.activeElement;
  return {deck: Boolean(a && a.closest('.flip-container')), math: Boolean(a && a.closest('mjx-container')),
          footer: Boolean(a && a.closest('footer'))};
}"""
MAX_TABS = 3000


def test_tab_leaves_a_flashcard_deck_and_reaches_the_footer(open_page):
    """No keyboard trap: Tab, pressed from the top of a chapter with a deck, passes through the deck
    and on to the footer (a deck's own key handler must not keep the focus), and never stops on a
    formula (a chapter has hundreds: each a stop would bury the links and controls)."""
    page, log = open_page(chapter_with(".cards.json"))
    in_deck = on_math = 0
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        where = page.evaluate(FOCUS_JS)
        in_deck += where["deck"]
        on_math += where["math"]
        if where["footer"]:
            break
    else:
        pytest.fail(f"{MAX_TABS} presses of Tab never reached the footer (the focus was in a deck {in_deck} times)")
    assert in_deck, "the focus never entered the flashcard deck on its way to the footer"
    assert on_math == 0, f"Tab stopped on a formula {on_math} times"
    assert not log.problems(), log.problems()


LINES_OF_NEXT_JS = """
() => {
  const next = document.querySelector('.next');
  const range = document.createRange();
  range.selectNodeContents(next);
  const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
  return [next.textContent.trim(), tops.size];
}
"""


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_flashcards_next_stays_on_one_line(book_browser, viewport):
    context, page, log = open_at(book_browser, chapter_with(".cards.json"), viewport)
    try:
        deck = page.locator(".flip-container").first
        deck.scroll_into_view_if_needed()
        deck.click()
        page.wait_for_function("() => document.querySelector('.next').textContent.includes('Next')")
        text, lines = page.evaluate(LINES_OF_NEXT_JS)
        assert text == "Next >" and lines == 1, f"{text!r} is drawn on {lines} lines"
        assert not log.problems(), log.problems()
    finally:
        context.close()


# --------------------------------------------------------------------------- quiz


def bold_words(question: str) -> list[str]:
    return re.findall(r"\*\*([^*]+)\*\*", question)


QUIZ_TEXT_JS = """
() => [...document.querySelectorAll('.Quiz')].map((q) => ({
  text: q.querySelector('[id^=quizQn]').innerText,
  strong: [...q.querySelectorAll('[id^=quizQn] strong')].map((s) => s.textContent),
}))
"""


# The option that has the keyboard's focus: its place among its question's
# options, the width of its focus ring, and how many of them are answered.
FOCUSED_OPTION_JS = """
() => {
  const label = document.activeElement.closest('label.MCButton');
  if (!label) return null;
  const all = [...label.parentElement.querySelectorAll('label.MCButton')];
  const style = getComputedStyle(label);
  return {
    index: all.indexOf(label),
    ring: style.outlineStyle === 'none' ? 0 : parseFloat(style.outlineWidth),
    answered: all.filter((l) => /correctButton|incorrectButton/.test(l.className)).map((l) => all.indexOf(l)),
  };
}
"""


def test_quiz_shows_markdown_and_precision_and_answers_from_the_keyboard(open_page):
    path = chapter_with(".quiz.json", r"\*\*\w")
    questions = read_json(CHAPTERS / path.removeprefix("chapters/").replace(".html", ".quiz.json"))
    page, log = open_page(path)
    page.wait_for_selector(".Quiz")
    shown = page.evaluate(QUIZ_TEXT_JS)
    assert len(shown) == len(questions)
    for q in shown:
        assert "**" not in q["text"] and "`" not in q["text"], q["text"]
    bold = {w for question in questions for w in bold_words(question["question"])}
    assert bold and bold <= {w for q in shown for w in q["strong"]}, "a **word** of the quiz is not shown in bold"

    rounding = [q for q in questions if q["type"] == "numeric" and "precision" in q]
    assert rounding, f"{path}: no numeric question rounds the answer"
    for question in rounding:
        start = " ".join(re.split(r"\$", question["question"])[0].split())
        texts = [" ".join(q["text"].split()) for q in shown if " ".join(q["text"].split()).startswith(start)]
        assert texts, f"{path}: {start!r} is not on the page"
        digits = question["precision"]
        wanted = f"({digits} significant digit{'s' if digits > 1 else ''})"
        assert texts[0].endswith(wanted), f"{texts[0]!r} does not end with {wanted!r}"

    # The arrow keys move the focus between the options without answering;
    # Space answers with the focused one.
    options = page.locator(".Quiz", has=page.locator(".MultipleChoiceQn")).first.locator("label.MCButton input")
    options.first.focus()
    page.keyboard.press("ArrowDown")
    focused = page.evaluate(FOCUSED_OPTION_JS)
    assert focused and focused["index"] == 1 and not focused["answered"], focused
    assert focused["ring"] >= 2, f"the focused option shows a focus ring {focused['ring']} px wide"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.evaluate(FOCUSED_OPTION_JS)["index"] == options.count() - 1  # round to the last
    page.keyboard.press("Space")
    assert page.evaluate(FOCUSED_OPTION_JS)["answered"] == [options.count() - 1]

    typing, marked = typed_answer_contrast(page)
    assert typing is not None and typing >= 4.5, f"a typed answer has contrast {typing}"
    assert marked is not None and marked >= 4.5, f"a marked answer has contrast {marked}"
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- search


VISIBLE_SEARCH_JS = """
() => [...document.querySelectorAll('.search-button__button')].filter((b) => {
  const r = b.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(b).visibility !== 'hidden';
}).length
"""


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_page_shows_one_search_box(book_browser, viewport):
    context, page, log = open_at(book_browser, chapter_with(".quiz.json"), viewport)
    try:
        page.evaluate(DRAWN_JS)  # the theme has laid out its header for the width
        assert page.evaluate(VISIBLE_SEARCH_JS) == 1
        assert not log.problems(), log.problems()
    finally:
        context.close()
