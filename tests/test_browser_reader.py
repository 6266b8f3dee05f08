"""What a reader does with the built book, in headless Chromium with no network.

Answer a quiz question right and wrong, flip a flashcard, search, find every
part in the navigation, launch or download a chapter's notebook, print a page;
and save screenshots of a chapter with math, a quiz and a heatmap under
``_build/screenshots/`` for a person to look at.

Expected texts come from the book's own sources (the quiz and flashcard files,
``_toc.yml``, ``_config.yml``), not from the built pages.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from browser import DRAWN_JS, HTML, RAW_TEX_JS, ROOT, SCREENSHOTS, VIEWPORT, read_json

from sdpa_course.teaching.study import markdown_html

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def toc_files() -> list[tuple[str, str]]:
    """(part caption, file) for every entry of the table of contents, in order."""
    return [(part["caption"], ch["file"]) for part in TOC["parts"] for ch in part["chapters"]]


def notebook_pages() -> list[str]:
    """Pages built from notebooks: the chapters (MyST notebooks) and the homework."""
    return [f"{file}.html" for _, file in toc_files() if file.startswith(("chapters/", "exercises/"))]


def plain_start(text: str) -> str:
    """The words of a text before its first math ($ or \\( ), for comparing with rendered text."""
    return re.split(r"\$|\\\(", text, maxsplit=1)[0].strip()


def same_words(a: str) -> str:
    return " ".join(a.split())


# --------------------------------------------------------------------------- quiz


def quiz_question() -> tuple[str, dict, dict, dict]:
    """A chapter page and one of its multiple-choice questions with a right and a wrong answer.

    Both answers' feedback must start with words (not math), so the rendered
    feedback can be compared with the quiz file.
    """
    for _, file in toc_files():
        source = ROOT / f"{file}.quiz.json"
        if not source.is_file() or not (HTML / f"{file}.html").is_file():
            continue
        for question in read_json(source):
            if question["type"] != "multiple_choice":
                continue
            rights = [a for a in question["answers"] if a["correct"] and len(plain_start(a["feedback"])) >= 10]
            wrongs = [a for a in question["answers"] if not a["correct"] and len(plain_start(a["feedback"])) >= 10]
            if rights and wrongs:
                return f"{file}.html", question, rights[0], wrongs[0]
    pytest.fail("no chapter shows a multiple-choice quiz question with a right and a wrong answer")


MARK_ANSWERS_JS = """
([right, wrong]) => {
  const labels = [...document.querySelectorAll('.Quiz label.MCButton')];
  const r = labels.find((l) => l.dataset.feedback === right);
  const w = labels.find((l) => l.dataset.feedback === wrong);
  if (!r || !w) return null;
  r.setAttribute('data-test-answer', 'right');
  w.setAttribute('data-test-answer', 'wrong');
  return r.id.split('-')[0];
}
"""


def answer(page, quiz_id: str, which: str) -> tuple[str, str]:
    """Click an answer as a reader would; return the feedback box's class and text."""
    page.click(f"label[data-test-answer={which}]")
    feedback = page.locator(f"#fb{quiz_id}")
    feedback.wait_for(state="visible")
    page.wait_for_function(f"document.querySelector('#fb{quiz_id}').textContent.trim().length > 0")
    return feedback.get_attribute("class") or "", feedback.inner_text()


def test_quiz_gives_feedback_for_a_right_and_a_wrong_answer(open_page):
    path, question, right, wrong = quiz_question()
    page, log = open_page(path)
    # The page holds the feedback as teaching.study hands it to the quiz: Markdown made HTML.
    quiz_id = page.evaluate(MARK_ANSWERS_JS, [markdown_html(right["feedback"]), markdown_html(wrong["feedback"])])
    assert quiz_id, f"{path}: the question {question['question'][:60]!r} is not on the page"

    cls, text = answer(page, quiz_id, "wrong")
    assert "incorrect" in cls.split(), f"a wrong answer's feedback box has class {cls!r}"
    assert same_words(text).startswith(same_words(plain_start(wrong["feedback"])))

    cls, text = answer(page, quiz_id, "right")
    assert "correct" in cls.split() and "incorrect" not in cls.split(), cls
    assert same_words(text).startswith(same_words(plain_start(right["feedback"])))
    assert page.evaluate(RAW_TEX_JS) == [], "the feedback's math was not typeset"
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- flashcards


def flashcard_page() -> tuple[str, list[dict]]:
    for _, file in toc_files():
        source = ROOT / f"{file}.cards.json"
        if source.is_file() and (HTML / f"{file}.html").is_file():
            return f"{file}.html", read_json(source)
    pytest.fail("no chapter shows a deck of flashcards")


def test_a_flashcard_flips_to_its_back(open_page):
    path, cards = flashcard_page()
    page, log = open_page(path)
    deck = page.locator(".flip-container").first
    deck.scroll_into_view_if_needed()
    card = deck.locator(".flipper.frontcard")
    front = same_words(card.locator(".front .flashcardtext").inner_text())
    shown = [c for c in cards if plain_start(c["front"]) and front.startswith(same_words(plain_start(c["front"])))]
    assert shown, f"{path}: the first card's front {front[:60]!r} is not a card of the chapter's deck"

    assert "flip" not in (deck.get_attribute("class") or "").split()
    deck.click()
    page.wait_for_function("() => document.querySelector('.flip-container').classList.contains('flip')")
    page.evaluate(DRAWN_JS)  # the CSS turn (0.6 s) has ended
    turned = card.evaluate(
        "(el) => { const m = getComputedStyle(el).transform.match(/matrix(?:3d)?\\(([^,]+)/);"
        " return m ? Number(m[1]) : 1; }"
    )
    assert turned == pytest.approx(-1, abs=1e-6), "the card did not turn over (rotateY 180 degrees)"
    back = same_words(card.locator(".back .flashcardtext").inner_text())
    assert back.startswith(same_words(plain_start(shown[0]["back"])))
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- search


def test_search_box_finds_pages_offline(open_page, site_server):
    page, log = open_page("intro.html")
    page.locator(".search-button-field:visible").first.click()
    box = page.locator("#pst-search-dialog input[type=search]")
    box.wait_for(state="visible")
    box.fill("softmax")
    box.press("Enter")
    page.wait_for_url(re.compile(r"search\.html\?q=softmax"))
    page.wait_for_selector("#search-results ul.search li")
    hits = page.eval_on_selector_all("#search-results ul.search li a", "(as) => as.map((a) => a.href)")
    pages = {h.split("#")[0].split("?")[0] for h in hits}
    assert any("/chapters/" in p for p in pages), f"searching 'softmax' found no chapter: {sorted(pages)}"
    for url in pages:
        assert site_server.file_for(url).is_file(), f"search result {url} leads nowhere"
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- navigation


def test_navigation_lists_every_part_and_page(open_page):
    page, log = open_page("intro.html")
    nav = page.locator("nav.bd-docs-nav")
    captions = [c.strip() for c in nav.locator("p.caption").all_inner_texts()]
    assert captions == [part["caption"] for part in TOC["parts"]]
    hrefs = nav.locator("a.reference.internal").evaluate_all("(as) => as.map((a) => a.href)")
    linked = {h.split("#")[0] for h in hrefs}
    for _, file in toc_files():
        assert any(h.endswith(f"/{file}.html") for h in linked), f"{file} is missing from the navigation"
    assert nav.locator("p.caption").first.is_visible()
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- title, logo, favicon


def test_title_logo_and_favicon(open_page, site_server):
    page, log = open_page("intro.html")
    assert page.title().endswith(CONFIG["title"])
    logo = page.locator(".navbar-brand img.logo__image:visible").first
    assert logo.get_attribute("alt"), "the logo has no alt text"
    assert logo.evaluate("(img) => img.complete && img.naturalWidth > 0"), "the logo did not load"
    icon = page.locator("link[rel~=icon]").first.evaluate("(l) => l.href")
    # A file of the built site, served on 127.0.0.1: fetching it sends nothing off this machine.
    assert site_server.file_for(icon) is not None, f"the favicon {icon} is not on the book's own server"
    with urllib.request.urlopen(icon) as response:
        assert response.status == 200
        icon_bytes = response.read()
    assert b"<svg" in icon_bytes[:2000]
    assert not log.problems(), log.problems()
    # The front page only redirects. Its icon is written inline: a file would be
    # fetched while the page redirects, and cut off whenever the redirect wins.
    front = (HTML / "index.html").read_text(encoding="utf-8")
    inline = re.search(r'<link rel="icon" href="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', front)
    assert inline, f"the redirect page index.html names no inline icon:\n{front[:300]}"
    assert base64.b64decode(inline.group(1)) == icon_bytes, "the redirect page's icon is not the book's"


# --------------------------------------------------------------------------- launch, download


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


@pytest.mark.parametrize("path", notebook_pages())
def test_notebook_page_offers_launch_buttons_only_when_configured_and_its_notebook(site_server, path):
    """Launch buttons appear only once ``repository: url`` is set (see
    ``_ext/launch_links.py``); every notebook page offers its notebook either way."""
    built = HTML / path
    assert built.is_file(), f"{path} was not built"
    links = _Links()
    links.feed(built.read_text(encoding="utf-8"))
    launch = CONFIG["launch_buttons"]
    configured = bool(CONFIG["repository"].get("url"))
    for name in ("binderhub_url", "colab_url", "jupyterhub_url"):
        if configured and launch.get(name):
            assert any(h.startswith(launch[name]) for h in links.hrefs), f"{path}: no {name} launch button"
        elif launch.get(name):
            assert not any(h.startswith(launch[name]) for h in links.hrefs), (
                f"{path}: a {name} launch button, but no repository is set for it to open"
            )
    notebooks = [h for h in links.hrefs if h.endswith(".ipynb") and "_sources/" in h]
    assert notebooks, f"{path}: no .ipynb download"
    url = site_server.url(str(Path(path).parent / notebooks[0]))
    with urllib.request.urlopen(url) as response:
        notebook = json.loads(response.read())
    assert notebook["nbformat"] == 4 and notebook["cells"], f"{path}: the download is not a notebook"


def test_download_button_saves_the_chapters_notebook(open_page):
    path = chapter_with_most_math()
    page, log = open_page(path)
    title = same_words(page.locator("article.bd-article h1").first.inner_text()).rstrip("#").strip()
    page.locator(".dropdown-download-buttons > button").click()
    link = page.locator(".dropdown-download-buttons a[href$='.ipynb']")
    link.wait_for(state="visible")
    with page.expect_download() as download:  # a .ipynb is saved, not shown
        link.click()
    assert download.value.suggested_filename == Path(path).with_suffix(".ipynb").name
    notebook = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert notebook["nbformat"] == 4
    assert any(c["cell_type"] == "code" for c in notebook["cells"]), "the notebook has no code cells"
    headings = [
        line[2:].strip()
        for c in notebook["cells"]
        if c["cell_type"] == "markdown"
        for line in "".join(c["source"]).splitlines()
        if line.startswith("# ")
    ]
    assert headings and title.startswith(same_words(plain_start(headings[0]))), (
        f"the notebook's title {headings[:1]} is not the page's {title!r}"
    )
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- print


def chapter_with_most_math() -> str:
    chapters = [p for p in notebook_pages() if p.startswith("chapters/") and (HTML / p).is_file()]
    if not chapters:
        pytest.fail("no chapter page was built")
    return max(chapters, key=lambda p: (HTML / p).read_text(encoding="utf-8").count('class="math'))


SCREEN_ONLY = [
    ".bd-header",
    ".bd-sidebar-primary",
    ".bd-sidebar-secondary",
    ".bd-header-article",
    ".prev-next-area",
    ".bd-footer",
]


def test_printed_page_is_the_chapter_alone(open_page):
    path = chapter_with_most_math()
    page, log = open_page(path)
    page.emulate_media(media="print")
    for selector in SCREEN_ONLY:
        for element in page.locator(selector).all():
            assert not element.is_visible(), f"{selector} is printed"
    assert page.locator("article.bd-article").is_visible()
    assert page.locator("article.bd-article h1").first.is_visible()
    assert page.evaluate(RAW_TEX_JS) == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "print-preview.png"))
    assert not log.problems(), log.problems()


def test_a_printed_explorer_is_a_still_figure(open_page):
    # On paper (and in the book's PDF) an explorer shows its starting figure,
    # not controls that could not move there.
    page, log = open_page("chapters/06_causal_masking.html")
    explorer = page.locator(".explorer").first
    assert explorer.locator(".explorer-controls").is_visible()
    page.emulate_media(media="print")
    assert not explorer.locator(".explorer-controls").is_visible()
    assert explorer.locator("img.explorer-figure").is_visible()
    assert not log.problems(), log.problems()


# --------------------------------------------------------------------------- screenshots


def heatmap_page() -> str:
    for page in notebook_pages():
        if (HTML / page).is_file() and re.search(
            r'<img[^>]*alt="[^"]*heatmap', (HTML / page).read_text(encoding="utf-8"), re.I
        ):
            return page
    pytest.fail("no chapter shows a heatmap (an image whose alt text says heatmap)")


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def shoot(page, target, name: str) -> Path:
    """Scroll a target near the top of the window and save the window as a PNG."""
    target.scroll_into_view_if_needed()
    target.evaluate("(el) => { el.scrollIntoView({block: 'start'}); window.scrollBy(0, -120); }")
    page.evaluate(DRAWN_JS)
    box = target.bounding_box()
    assert box and box["y"] < VIEWPORT["height"] and box["y"] + box["height"] > 0, f"{name}: not in view"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    out = SCREENSHOTS / name
    page.screenshot(path=str(out))
    assert png_size(out) == (VIEWPORT["width"], VIEWPORT["height"])
    return out


def test_screenshots_of_math_a_quiz_and_a_heatmap(open_page):
    page, log = open_page(chapter_with_most_math())
    shoot(page, page.locator("div.math").first, "chapter-math.png")
    assert not log.problems(), log.problems()

    path, _, right, wrong = quiz_question()
    page, log = open_page(path)
    # The page holds the feedback as teaching.study hands it to the quiz: Markdown made HTML.
    quiz_id = page.evaluate(MARK_ANSWERS_JS, [markdown_html(right["feedback"]), markdown_html(wrong["feedback"])])
    answer(page, quiz_id, "right")
    shoot(page, page.locator(f"#quizWrap{quiz_id}"), "quiz.png")
    assert not log.problems(), log.problems()

    page, log = open_page(heatmap_page())
    figure = page.locator("figure:has(img[alt*='heatmap' i])").first
    shoot(page, figure, "heatmap.png")
    assert not log.problems(), log.problems()
