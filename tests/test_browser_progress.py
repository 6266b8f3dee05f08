"""The learner's progress (_static/progress.js) in headless Chromium, served over
HTTP and opened from files (file://), with no request leaving the site. Each
test runs over HTTP; the quiz's round trip also from files (a page's storage
there is the browser's one file origin), and the other tests from files only
with ``./course test --matrix``.

- Quiz answers come back after a reload, found by question id and option text
  (the options are shuffled again), and the "Your progress" page counts them.
- The review page schedules cards with FSRS: the due dates it stores for a
  sequence of answers at fixed times are the ones ts-fsrs itself computes,
  run in node from ``_ext/node_modules`` by this test; new cards come in book
  order, ten a day, as the review page says.
- Export, reset and import give back the same stored state.
- The review works from the keyboard, and axe-core finds nothing serious on the
  progress and review pages in use, in light and dark mode.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from browser import HTML, ROOT, SCREENSHOTS, BookBrowser, describe_axe, record_axe, run_axe, wait_until_settled
from built_book import built_page
from suite_groups import matrix_only

from sdpa_course.teaching.study import card_id, load_cards, load_quiz, prepare_quiz, question_id

KEY = "attention-course-progress-v1"
CHAPTER = "03_queries_keys_values"  # a quiz with every kind of question
QUIZ = ROOT / "chapters" / f"{CHAPTER}.quiz.json"
DECKS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.cards.json"))
PROGRESS = "appendix/progress.html"
REVIEW = "appendix/review.html"
TS_FSRS = ROOT / "_ext" / "node_modules" / "ts-fsrs"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass
class Site:
    """The built book opened one way (http or file), in one browser context."""

    how: str
    context: Any
    browser: BookBrowser
    outside: list[str] = field(default_factory=list)  # requests for anything but the site
    errors: list[str] = field(default_factory=list)  # uncaught script errors

    def url(self, path: str) -> str:
        return self.browser.server.url(path) if self.how == "http" else (HTML / path).as_uri()

    def new_page(self) -> Any:
        page = self.context.new_page()
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        return page

    def open(self, path: str, page: Any = None) -> Any:
        built_page(path)
        if page is not None:
            self.settle(page)
        page = page or self.new_page()
        page.goto(self.url(path), wait_until="load")
        wait_until_settled(page, self.browser.pid)
        return page

    def settle(self, page: Any) -> None:
        """Wait until a page of its own reads what ``page`` stored.

        A renderer sends its localStorage writes to the browser process by
        messages of their own, and a navigation that starts a new renderer can
        read the state before the last message arrives. The test checks what
        the course stores, not how soon Chromium passes it between renderers,
        so it waits until another page sees the write before it navigates."""
        if not page.url.startswith(("http:", "file:")):
            return
        read = f"() => localStorage.getItem({KEY!r})"
        if page.evaluate(read) is None:
            return
        witness = self.new_page()
        witness.goto(self.url(PROGRESS), wait_until="load")
        # Both pages' current state, read afresh each time: a page may store again
        # while the witness waits (a snapshot taken before could never come back).
        # Every 2 s the witness loads again, so that it reads the browser's copy
        # anew rather than wait for its own to be told of the change.
        deadline = time.monotonic() + 60
        waits = 0
        while witness.evaluate(read) != page.evaluate(read):
            assert time.monotonic() < deadline, "another page never read what this page stored"
            waits += 1
            if waits % 40 == 0:
                witness.reload(wait_until="load")
            else:
                witness.wait_for_timeout(50)
        witness.close()

    def stored(self, page: Any) -> Any:
        raw = page.evaluate(f"() => localStorage.getItem({KEY!r})")
        return None if raw is None else json.loads(raw)

    def check(self) -> None:
        """Nothing was asked of another host, and no script failed."""
        assert not self.outside, f"requests outside the site: {self.outside}"
        assert not self.errors, self.errors


@pytest.fixture(params=["http", matrix_only("file", id="file")])
def site(request, book_browser: BookBrowser) -> Iterator[Site]:
    if request.param == "file":
        context = request.getfixturevalue("file_context")
        yield Site("file", context, book_browser, outside=context.blocked)
        return
    context = book_browser.new_context()
    made = Site("http", context, book_browser)
    site_prefixes = (book_browser.server.origin + "/", "data:", "blob:")
    context.on("request", lambda r: None if r.url.startswith(site_prefixes) else made.outside.append(r.url))
    try:
        yield made
    finally:
        context.close()


# --------------------------------------------------------------------------- quiz


def option(page: Any, shown_answer: dict) -> Any:
    """The label of one option on the page, found by its feedback (the options are shuffled)."""
    return page.locator(f"label.MCButton[data-feedback={json.dumps(shown_answer['feedback'])}]")


def marks(page: Any, shown_answers: list[dict]) -> list[str]:
    """How each option is marked: "correctButton", "incorrectButton" or ""."""
    classes = [option(page, a).get_attribute("class") or "" for a in shown_answers]
    return [next((m for m in ("correctButton", "incorrectButton") if m in c.split()), "") for c in classes]


@pytest.mark.parametrize("site", ["http", "file"], indirect=True)
def test_quiz_answers_come_back_and_the_progress_page_counts_them(site):
    questions = load_quiz(QUIZ)
    shown = prepare_quiz(questions)
    choice = next(i for i, q in enumerate(questions) if q["type"] == "multiple_choice")
    many = next(i for i, q in enumerate(questions) if q["type"] == "many_choice")
    numeric = next(i for i, q in enumerate(questions) if q["type"] == "numeric" and "precision" in q)
    wrong = next(j for j, a in enumerate(questions[choice]["answers"]) if not a["correct"])
    right_value = next(a["value"] for a in questions[numeric]["answers"] if a["correct"] and a["type"] == "value")
    many_answers = questions[many]["answers"]
    many_right = [j for j, a in enumerate(many_answers) if a["correct"]]
    many_wrong = next(j for j, a in enumerate(many_answers) if not a["correct"])
    # Choose all that apply: a right pick, a wrong one, then every other right one.
    many_clicks = [many_right[0], many_wrong, *many_right[1:]]
    many_marks = ["correctButton" if a["correct"] else "incorrectButton" for a in many_answers]
    many_marks = [m if j in many_clicks else "" for j, m in enumerate(many_marks)]

    page = site.open(f"chapters/{CHAPTER}.html")
    option(page, shown[choice]["answers"][wrong]).click()
    for step, j in enumerate(many_clicks, 1):
        option(page, shown[many]["answers"][j]).click()
        # A wrong pick leaves the right picks made before it marked.
        assert marks(page, shown[many]["answers"]) == [
            m if k in many_clicks[:step] else "" for k, m in enumerate(many_marks)
        ], f"after {step} clicks"
    wraps = page.locator(".Quiz")
    field = wraps.nth(numeric).locator("input.Input-text")
    field.click()
    field.press_sequentially(f"{right_value:g}")
    field.press("Enter")
    page.get_by_label("I have finished this chapter").check()
    page.wait_for_function(
        f"() => {{ const s = JSON.parse(localStorage.getItem({KEY!r}) || '{{}}');"
        f" const c = s.chapters && s.chapters[{CHAPTER!r}]; return c && c.done && Object.keys(c.quiz).length === 3; }}"
    )
    quiz = site.stored(page)["chapters"][CHAPTER]["quiz"]
    # Stored by question id and the option's text as written in the quiz file.
    assert quiz[question_id(questions[choice])]["answers"] == [questions[choice]["answers"][wrong]["answer"]]
    assert quiz[question_id(questions[choice])]["correct"] is False
    assert sorted(quiz[question_id(questions[many])]["answers"]) == sorted(
        many_answers[j]["answer"] for j in many_clicks
    )
    assert quiz[question_id(questions[many])]["correct"] is False  # one wrong option is picked
    assert quiz[question_id(questions[numeric])] | {"at": None} == {
        "answers": [f"{right_value:g}"],
        "correct": True,
        "at": None,
    }

    site.open(f"chapters/{CHAPTER}.html", page)  # a reload: the options are shuffled again
    marked = option(page, shown[choice]["answers"][wrong])
    assert "incorrectButton" in (marked.get_attribute("class") or "")
    assert marks(page, shown[many]["answers"]) == many_marks  # every pick, not only the last click
    field = page.locator(".Quiz").nth(numeric).locator("input.Input-text")
    assert field.input_value() == f"{right_value:g}"
    assert "correctButton" in (field.get_attribute("class") or "")
    assert page.locator(".Quiz").nth(numeric).locator(".Feedback.correct").count() == 1
    assert "earlier answers to 3 of these questions" in page.locator(".study-note").first.inner_text()
    assert page.get_by_label("I have finished this chapter").is_checked()
    # A second click takes the wrong pick back: the right picks alone answer the question.
    option(page, shown[many]["answers"][many_wrong]).click()
    page.wait_for_function(
        f"(id) => JSON.parse(localStorage.getItem({KEY!r})).chapters[{CHAPTER!r}].quiz[id].correct",
        arg=question_id(questions[many]),
    )

    page = site.open(PROGRESS, page)
    row = page.locator(f'tr[data-chapter="{CHAPTER}"]')
    assert row.locator(".study-answered").inner_text() == f"3 of {len(questions)}"
    assert row.locator(".study-right").inner_text() == "2"
    cards = load_cards(ROOT / "chapters" / f"{CHAPTER}.cards.json")
    assert row.locator(".study-new").inner_text() == f"{len(cards)} of {len(cards)}"
    assert row.locator("input[type=checkbox]").is_checked()
    other = page.locator('tr[data-chapter="01_self_attention"]')
    assert other.locator(".study-answered").inner_text().startswith("0 of ")
    assert not other.locator("input[type=checkbox]").is_checked()
    site.check()


# --------------------------------------------------------------------------- review

FSRS_IN_NODE = r"""
const { fsrs, createEmptyCard, Rating } = require(process.argv[1]);
const scheduler = fsrs();  // the library's defaults
const cards = {};
for (const step of JSON.parse(process.argv[2])) {
  const now = new Date(step.at);
  const card = cards[step.card] || createEmptyCard(now);
  cards[step.card] = scheduler.next(card, now, Rating[step.rating]).card;
}
const due = {};
for (const [id, card] of Object.entries(cards)) due[id] = card.due.toISOString();
console.log(JSON.stringify(due));
"""


def fsrs_due_dates(steps: list[dict]) -> dict[str, str]:
    """The due date ts-fsrs gives each card after the steps (card, time, rating), run in node."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (./course needs it for npm ci): cannot run ts-fsrs")
    if not (TS_FSRS / "package.json").is_file():
        pytest.fail("_ext/node_modules/ts-fsrs is missing: run ./course build (npm ci in _ext/) first")
    done = subprocess.run(
        [node, "-e", FSRS_IN_NODE, str(TS_FSRS), json.dumps(steps)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def book_order_cards() -> list[str]:
    """Every card id in book order: the chapters' decks in order, each in its file's order."""
    return [f"{deck.name.removesuffix('.cards.json')}:{card_id(c)}" for deck in DECKS for c in load_cards(deck)]


def at(page: Any, when: datetime) -> None:
    page.clock.set_fixed_time(when)


def rate(page: Any, rating: str) -> str:
    """Show the current card's answer and rate it; returns the card's id."""
    card = page.locator(".study-card").get_attribute("data-card")
    page.get_by_role("button", name="Show answer").click()
    page.locator(f".study-rate[data-rating={rating}]").click()
    # The next card (or the message that none is due) replaces the answer.
    page.wait_for_function("() => !document.querySelector('.study-back')")
    return card


def open_review(site: Site, page: Any, when: datetime) -> Any:
    at(page, when)
    page = site.open(REVIEW, page)
    page.locator(".study-card").wait_for()
    return page


def iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def test_review_due_dates_are_those_fsrs_promises(site):
    order = book_order_cards()
    page = open_review(site, site.new_page(), T0)
    steps = []
    # Day one: the first two new cards, in book order.
    for expected, rating in [(order[0], "Good"), (order[1], "Again")]:
        assert page.locator(".study-card").get_attribute("data-card") == expected
        assert rate(page, rating) == expected
        steps.append({"card": expected, "at": iso(T0), "rating": rating})
    # Fifteen minutes on, both are due again: the one due longest ago first
    # (Again brought order[1] back sooner than Good brought order[0]).
    later = T0 + timedelta(minutes=15)
    page = open_review(site, page, later)
    for expected, rating in [(order[1], "Good"), (order[0], "Good")]:
        assert page.locator(".study-card").get_attribute("data-card") == expected
        rate(page, rating)
        steps.append({"card": expected, "at": iso(later), "rating": rating})
    # A month on, whatever is due is rated Easy, then Hard.
    days = T0 + timedelta(days=30)
    page = open_review(site, page, days)
    stored = site.stored(page)["cards"]
    for rating in ("Easy", "Hard"):
        card = page.locator(".study-card").get_attribute("data-card")
        if card not in (order[0], order[1]):
            break
        rate(page, rating)
        steps.append({"card": card, "at": iso(days), "rating": rating})
    assert len(steps) >= 5, "no card was due a month later"
    stored = site.stored(page)["cards"]
    expected = fsrs_due_dates(steps)
    assert {c: stored[c]["due"] for c in expected} == expected
    site.check()


def test_ten_new_cards_a_day_in_book_order(site):
    order = book_order_cards()
    page = open_review(site, site.new_page(), T0)
    seen = []
    while page.locator(".study-show").count():
        seen.append(rate(page, "Good"))
    assert seen == order[:10]
    assert page.locator(".study-empty").inner_text().startswith("No card is due now")
    assert "New today: 0" in page.locator(".study-counts").inner_text()
    # The next day: the ten cards are due, and ten more new ones wait behind them.
    page = open_review(site, page, T0 + timedelta(days=1, hours=1))
    counts = page.locator(".study-counts").inner_text()
    assert re.search(r"Due now: 10\. New today: 10 ", counts), counts
    site.check()


# --------------------------------------------------------------------------- export, reset, import


def test_export_reset_import_round_trip(site, tmp_path: Path):
    page = open_review(site, site.new_page(), T0)
    rate(page, "Hard")
    page = site.open(f"chapters/{CHAPTER}.html", page)
    page.get_by_label("I have finished this chapter").check()
    page = site.open(PROGRESS, page)
    before = site.stored(page)
    assert before["cards"] and before["chapters"][CHAPTER]["done"]
    summary = page.locator(".study-summary").inner_text()

    with page.expect_download() as download:
        page.get_by_role("button", name="Export progress to a file").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert json.loads(saved.read_text(encoding="utf-8")) == before

    page.once("dialog", lambda d: d.dismiss())
    page.get_by_role("button", name="Reset progress…").click()
    page.get_by_text("Nothing deleted.").wait_for()
    assert site.stored(page) == before

    page.once("dialog", lambda d: d.accept())
    page.get_by_role("button", name="Reset progress…").click()
    page.get_by_text("Your progress was deleted.").wait_for()
    assert site.stored(page) is None
    assert page.locator(".study-summary").inner_text() != summary

    bad = tmp_path / "notes.json"
    bad.write_text('{"version": 7}', encoding="utf-8")
    page.locator("#study-import-file").set_input_files(bad)
    page.get_by_text("Not imported: notes.json is not a progress file of this course").wait_for()
    assert site.stored(page) is None

    page.once("dialog", lambda d: d.accept())
    page.locator("#study-import-file").set_input_files(saved)
    page.get_by_text(f"Imported {saved.name}.").wait_for()
    assert site.stored(page) == before
    assert page.locator(".study-summary").inner_text() == summary
    site.check()


# --------------------------------------------------------------------------- keyboard, accessibility


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_review_by_keyboard_and_no_serious_axe_violation(book_browser, scheme):
    rules = None if scheme == "light" else ["color-contrast"]  # only contrast depends on the theme
    context = book_browser.new_context(color_scheme=scheme)
    try:
        page, log = book_browser.open(context, REVIEW)
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
        page.locator(".study-show").focus()
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.classList.contains('study-back')")
        # The card's math is typeset, as on the rest of the page.
        page.wait_for_function("() => document.querySelector('.study-card mjx-container') !== null")
        # Tab leads through the answer (MathJax makes each formula focusable) to the ratings.
        for _ in range(30):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.tagName") == "BUTTON":
                break
        assert page.evaluate("document.activeElement.dataset.rating") == "Again"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(".study-card").screenshot(path=SCREENSHOTS / f"review-{scheme}.png")
        violations = run_axe(page, rules)
        record_axe(REVIEW + " (answer shown)", scheme, violations)
        failing = [v for v in violations if v["impact"] in ("serious", "critical")]
        assert not failing, describe_axe(failing)
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")  # Good
        page.wait_for_function("() => document.activeElement.classList.contains('study-show')")
        stored = json.loads(page.evaluate(f"() => localStorage.getItem({KEY!r})"))
        assert len(stored["cards"]) == 1

        page, log2 = book_browser.open(context, PROGRESS)
        page.locator(".study-progress").screenshot(path=SCREENSHOTS / f"progress-{scheme}.png")
        violations = run_axe(page, rules)
        record_axe(PROGRESS, scheme, violations)
        failing = [v for v in violations if v["impact"] in ("serious", "critical")]
        assert not failing, describe_axe(failing)
        assert not log.problems() and not log2.problems(), log.problems() + log2.problems()
    finally:
        context.close()
