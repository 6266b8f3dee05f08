"""What the pages tell the progress script (sdpa_course/teaching/study.py), and what the
review page says about its schedule.

Questions and cards are known by ids that do not depend on their position;
each quiz is preceded by a description of its questions that names every
option by its text in the file and by the feedback the widget puts on it; the
catalogue of the progress and review pages holds every chapter's questions and
cards in book order. The review page's statements about FSRS's defaults are
those of the pinned ts-fsrs, read from the library in node. Flashcards write
their formulas as TeX, for MathJax, not as plain text.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from built_book import built_page

from sdpa_course.teaching.study import (
    StudyDataError,
    card_id,
    catalog_script,
    chapter_title,
    load_cards,
    load_quiz,
    prepare_cards,
    prepare_quiz,
    question_id,
    show_quiz,
    study_catalog,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
QUIZZES = sorted(CHAPTERS.glob("*.quiz.json"))
DECKS = sorted(CHAPTERS.glob("*.cards.json"))


def test_ids_do_not_depend_on_position_and_an_id_field_wins():
    q = {"question": "What is $d_k$?"}
    assert question_id(q) == question_id({**q, "answers": []}) != question_id({"question": "Other?"})
    assert question_id({**q, "id": "dk"}) == "dk"
    card = {"front": "softmax", "back": "a"}
    assert card_id(card) == card_id({**card, "back": "b"}) != card_id({"front": "other", "back": "a"})
    assert card_id({**card, "id": "sm"}) == "sm"


def test_catalog_lists_every_chapter_with_its_questions_and_cards_in_book_order():
    catalog = study_catalog(CHAPTERS, with_text=True)
    names = [p.name.removesuffix(".quiz.json") for p in QUIZZES]
    assert [c["chapter"] for c in catalog] == sorted(set(names) | {p.name.removesuffix(".cards.json") for p in DECKS})
    for entry in catalog:
        quiz = CHAPTERS / f"{entry['chapter']}.quiz.json"
        deck = CHAPTERS / f"{entry['chapter']}.cards.json"
        assert entry["questions"] == [question_id(q) for q in load_quiz(quiz)]
        assert [c["id"] for c in entry["cards"]] == [f"{entry['chapter']}:{card_id(c)}" for c in load_cards(deck)]
        assert entry["page"] == f"chapters/{entry['chapter']}.html"
        number = int(entry["chapter"][:2])
        assert entry["title"].startswith(f"Chapter {number}: ")
    ids = [c["id"] for entry in catalog for c in entry["cards"]]
    assert len(ids) == len(set(ids)), "two cards of the book share an id"


def test_chapter_title_needs_a_heading(tmp_path):
    page = tmp_path / "03_x.md"
    page.write_text("# Queries\n", encoding="utf-8")
    assert chapter_title(page) == "Chapter 3: Queries"
    page.write_text("no heading\n", encoding="utf-8")
    with pytest.raises(StudyDataError, match="03_x.md: has no '# ' title"):
        chapter_title(page)


def test_two_options_with_the_same_feedback_are_refused(tmp_path):
    path = tmp_path / "q.quiz.json"
    same = {"correct": False, "feedback": "No."}
    path.write_text(
        json.dumps(
            [
                {
                    "question": "Pick",
                    "type": "multiple_choice",
                    "answers": [
                        {"answer": "a", "correct": True, "feedback": "Yes."},
                        {"answer": "b", **same},
                        {"answer": "c", **same},
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )
    with pytest.raises(StudyDataError, match="question 1: two answers have the same feedback"):
        load_quiz(path)


def test_each_quiz_is_preceded_by_its_description(monkeypatch):
    import IPython.display
    import jupyterquiz

    shown: list[object] = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj.data))
    monkeypatch.setattr(jupyterquiz, "display_quiz", lambda ref, **options: shown.append(ref))
    path = QUIZZES[0]
    show_quiz(path)
    assert len(shown) == 2 and isinstance(shown[0], str)
    marker = re.fullmatch(r'<script type="application/json" class="study-quiz-data">(.*)</script>', shown[0], re.S)
    assert marker, shown[0][:200]
    data = json.loads(marker[1])
    questions = load_quiz(path)
    assert data["chapter"] == path.name.removesuffix(".quiz.json")
    assert shown[1] == prepare_quiz(questions)
    for described, source, widget in zip(data["questions"], questions, shown[1], strict=True):
        assert described["id"] == question_id(source) and described["type"] == source["type"]
        if source["type"] == "numeric":
            continue
        assert [o["text"] for o in described["options"]] == [a["answer"] for a in source["answers"]]
        assert [o["feedback"] for o in described["options"]] == [a["feedback"] for a in widget["answers"]]
        assert [o["correct"] for o in described["options"]] == [a["correct"] for a in source["answers"]]


# What must not stand as plain text in a card: formula symbols, subscripts written
# as x_i, superscripts as x^T. Math ($...$) and code (`...`) are left out.
PROTECTED = re.compile(r"`[^`]+`|\$\$.+?\$\$|(?<!\\)\$(?:\\.|[^$\\])+\$", re.S)
PLAIN_FORMULA = re.compile(r"[Σ√ᵀ∂∞²ℓ≤≠]|\b[A-Za-z]+_[A-Za-z0-9{]+|\^[A-Za-z0-9]")


@pytest.mark.parametrize("deck", DECKS, ids=lambda p: p.name)
def test_cards_write_formulas_as_tex(deck):
    plain = [
        (n, side, PLAIN_FORMULA.findall(PROTECTED.sub(" ", card[side])))
        for n, card in enumerate(load_cards(deck), 1)
        for side in ("front", "back")
    ]
    assert not [p for p in plain if p[2]], f"formulas as plain text (card, side, what): {[p for p in plain if p[2]]}"


DEFAULTS_IN_NODE = r"""
const f = require(process.argv[1]);
console.log(JSON.stringify({
  retention: f.default_request_retention,
  learning: f.default_learning_steps,
  relearning: f.default_relearning_steps,
  fuzz: f.default_enable_fuzz,
}));
"""


def test_review_page_states_the_pinned_fsrs_defaults():
    node = shutil.which("node")
    library = ROOT / "_ext" / "node_modules" / "ts-fsrs"
    if node is None or not (library / "package.json").is_file():
        pytest.fail("node and _ext/node_modules/ts-fsrs are needed (./course build runs npm ci in _ext/)")
    out = subprocess.run([node, "-e", DEFAULTS_IN_NODE, str(library)], capture_output=True, text=True, check=True)
    defaults = json.loads(out.stdout)
    assert defaults == {"retention": 0.9, "learning": ["1m", "10m"], "relearning": ["10m"], "fuzz": False}
    page = " ".join((ROOT / "appendix" / "review.md").read_text(encoding="utf-8").split())
    retention = re.search(r"recall it with probability ([\d.]+)", page)
    assert retention and float(retention[1]) == defaults["retention"], retention
    # "(steps of 1 and 10 minutes for a new card, 10 minutes for a forgotten one)": learning, then relearning
    steps = re.search(r"\(steps of ([^)]*)\)", page)
    minutes = [int(step.removesuffix("m")) for step in defaults["learning"] + defaults["relearning"]]
    assert steps and [int(n) for n in re.findall(r"\d+", steps[1])] == minutes, steps
    lock = json.loads((ROOT / "_ext" / "package-lock.json").read_text(encoding="utf-8"))
    version = lock["packages"]["node_modules/ts-fsrs"]["version"]
    assert json.loads((library / "package.json").read_text(encoding="utf-8"))["version"] == version
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    assert f"version {version}" in bib, "the citation of ts-fsrs names another version than the pinned one"


def test_review_page_states_the_new_cards_a_day_of_the_script():
    script = (ROOT / "_static" / "progress.js").read_text(encoding="utf-8")
    per_day = re.search(r"NEW_CARDS_PER_DAY = (\d+);", script)
    assert per_day, "progress.js no longer sets NEW_CARDS_PER_DAY"
    page = " ".join((ROOT / "appendix" / "review.md").read_text(encoding="utf-8").split())
    stated = re.search(r"up to \*\*(\d+) new cards a day\*\*", page)
    assert stated and stated[1] == per_day[1], stated


def test_catalog_script_assigns_the_catalog_with_the_cards_text():
    script = catalog_script(CHAPTERS)
    prefix = "window.STUDY_CATALOG = "
    assert script.startswith(prefix) and script.endswith(";\n")
    assert json.loads(script[len(prefix) : -2]) == study_catalog(CHAPTERS, with_text=True)
    first = load_cards(DECKS[0])[0]
    assert json.loads(script[len(prefix) : -2])[0]["cards"][0]["back"] == prepare_cards([first])[0]["back"]


@pytest.mark.parametrize("quiz", QUIZZES, ids=lambda p: p.name)
def test_built_chapter_describes_its_quiz_for_the_progress_script(quiz):
    """A chapter executed before the description existed (a stale execution
    cache) shows its quiz, but the learner's answers would not be kept."""
    name = quiz.name.removesuffix(".quiz.json")
    page = built_page(f"chapters/{name}.html")
    found = re.search(r'<script type="application/json" class="study-quiz-data">(.*?)</script>', page, re.S)
    assert found, f"chapters/{name}.html has no description of its quiz: run the chapter again (clear its cache)"
    described = json.loads(found[1])
    assert described["chapter"] == name
    assert [q["id"] for q in described["questions"]] == [question_id(q) for q in load_quiz(quiz)]
