"""Every quiz and flashcard file of the book is well-formed, and the checker
catches the mistakes it exists to catch. What the widgets show has its
Markdown turned into HTML and states the precision a numeric answer needs.

Every chapter's quiz (``chapters/*.quiz.json``) also has at least 8 questions,
repeats no question of another chapter, spreads the position of its right
answers, and is displayed with its answers shuffled.
"""

import html
import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest
from built_book import built_page

from sdpa_course.teaching.study import (
    StudyDataError,
    load_cards,
    load_quiz,
    markdown_html,
    prepare_cards,
    prepare_quiz,
    show_quiz,
)

ROOT = Path(__file__).resolve().parents[1]
QUIZZES = sorted(ROOT.glob("chapters/*.quiz.json"))
DECKS = sorted(ROOT.glob("chapters/*.cards.json"))


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.name)
def test_quiz_file_is_valid_and_mixes_question_types(path):
    questions = load_quiz(path)
    kinds = {q["type"] for q in questions}
    assert "numeric" in kinds and kinds & {"multiple_choice", "many_choice"}


@pytest.mark.parametrize("path", DECKS, ids=lambda p: p.name)
def test_flashcard_file_is_valid(path):
    assert len(load_cards(path)) >= 3


GOOD = {
    "question": "2+2?",
    "type": "numeric",
    "precision": 1,
    "answers": [{"type": "value", "value": 4, "correct": True, "feedback": "Yes."}],
}


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda q: q.update(question=""), "no question text"),
        (lambda q: q.update(type="essay"), "type must be one of"),
        (lambda q: q["answers"][0].update(feedback=""), "no feedback"),
        (lambda q: q["answers"][0].update(correct=False), "no correct answer"),
        (lambda q: q["answers"][0].update(type="range", range=[5, 1]), "range must be"),
        (lambda q: q.update(precision=0), "significant digits, 1 to 21"),
    ],
)
def test_checker_rejects_broken_questions(tmp_path, change, words):
    q = json.loads(json.dumps(GOOD))
    change(q)
    path = tmp_path / "x.quiz.json"
    path.write_text(json.dumps([q]))
    with pytest.raises(StudyDataError, match=words):
        load_quiz(path)


def test_checker_rejects_a_card_without_a_back(tmp_path):
    path = tmp_path / "x.cards.json"
    path.write_text(json.dumps([{"front": "softmax", "back": " "}]))
    with pytest.raises(StudyDataError, match="card 1: has no back"):
        load_cards(path)


CHAPTERS = sorted(p for p in ROOT.glob("chapters/[0-9][0-9]_*.md") if not p.name.startswith("00_"))


def test_every_teaching_chapter_has_a_quiz_and_a_deck_beside_it():
    assert len(CHAPTERS) >= 7, f"expected chapters 1 to 7 at least, found {[p.name for p in CHAPTERS]}"
    for chapter in CHAPTERS:
        for kind in ("quiz", "cards"):
            data = chapter.with_suffix(f".{kind}.json")
            assert data.is_file(), f"{chapter.name} has no {data.name} beside it"
            assert f'"{data.name}"' in chapter.read_text(encoding="utf-8"), f"{chapter.name} never shows {data.name}"


# --------------------------------------------------------------------------- quiz design

MIN_QUESTIONS = 8
CHOICE_TYPES = ("multiple_choice", "many_choice")


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.name)
def test_quiz_has_at_least_eight_questions(path):
    assert len(load_quiz(path)) >= MIN_QUESTIONS, f"{path.name} has {len(load_quiz(path))} questions"


def _normalised(text: str) -> str:
    """A question's text, compared without case, spacing, punctuation or TeX markup."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def test_no_question_text_is_repeated_in_another_quiz():
    seen: dict[str, str] = {}
    repeats = []
    for path in QUIZZES:
        for question in load_quiz(path):
            key = _normalised(question["question"])
            if key in seen and seen[key] != path.name:
                repeats.append(f"{path.name} repeats a question of {seen[key]}: {question['question'][:70]!r}")
            seen.setdefault(key, path.name)
    assert not repeats, "\n".join(repeats)


def correct_positions(questions: list[dict]) -> list[int]:
    """The 0-based index of every correct option of the choice questions, in file order."""
    return [
        index
        for q in questions
        if q["type"] in CHOICE_TYPES
        for index, answer in enumerate(q["answers"])
        if answer["correct"]
    ]


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.name)
def test_right_answers_are_spread_over_the_option_positions(path):
    """The criterion, over all correct options of the file's choice questions
    (m of them; numeric questions have no option order): the most common index
    holds at most half of them, rounded up, and when m >= 2 at least two
    different indices occur. A quiz whose right answer is always first (or
    nearly always) fails; a learner could not guess by position even where
    shuffling is off (a printed page, a reader without JavaScript)."""
    positions = correct_positions(load_quiz(path))
    assert positions, f"{path.name} has no multiple-choice question"
    index, count = Counter(positions).most_common(1)[0]
    assert count <= math.ceil(len(positions) / 2), (
        f"{path.name}: {count} of {len(positions)} right answers are option {index} ({positions})"
    )
    if len(positions) >= 2:
        assert len(set(positions)) >= 2, f"{path.name}: every right answer is option {index}"


def test_position_criterion_rejects_a_quiz_whose_answer_is_always_first():
    always_first = [{"type": "multiple_choice", "answers": [{"correct": True}, {"correct": False}]}] * 5
    positions = correct_positions(always_first)
    assert Counter(positions).most_common(1)[0][1] > math.ceil(len(positions) / 2)


def test_show_quiz_turns_answer_shuffling_on(monkeypatch):
    import jupyterquiz

    calls = []
    monkeypatch.setattr(jupyterquiz, "display_quiz", lambda ref, **options: calls.append(options))
    show_quiz(QUIZZES[0])
    assert calls and calls[0].get("shuffle_answers") is True


QUIZ_CHAPTERS = [p for p in QUIZZES if p.with_suffix("").with_suffix(".md").is_file()]


@pytest.mark.parametrize("path", QUIZ_CHAPTERS, ids=lambda p: p.name)
def test_built_chapter_displays_its_quiz_with_answers_shuffled(path):
    page = built_page(f"chapters/{path.name.removesuffix('.quiz.json')}.html")
    flags = re.findall(r'data-shuffleanswers="(\w+)"', page)
    assert flags, f"{path.name}: the built chapter shows no quiz"
    assert set(flags) == {"True"}, f"{path.name}: the quiz is displayed with shuffle_answers={flags}"


def quizzes_on_page(page: str) -> list[list[dict]]:
    """The question lists jupyterquiz embeds in a built page (``var questions<id>=[...]``)."""
    decoder = json.JSONDecoder()
    return [decoder.raw_decode(page, m.end())[0] for m in re.finditer(r"var questions\w*=", page)]


@pytest.mark.parametrize("path", QUIZ_CHAPTERS, ids=lambda p: p.name)
def test_built_chapter_shows_the_current_quiz_file(path):
    """A chapter reads its quiz file when it is executed, but an incremental build
    re-reads only changed sources, and the execution cache keys a chapter on its
    code: after a change to the quiz alone, the built page keeps the old
    questions. This catches such a stale page."""
    shown = quizzes_on_page(built_page(f"chapters/{path.name.removesuffix('.quiz.json')}.html"))
    assert shown, f"{path.name}: the built chapter embeds no quiz"
    assert prepare_quiz(load_quiz(path)) in shown, (
        f"the built page shows another version of {path.name}: rebuild it "
        "from scratch (remove _build/), or touch the chapter's .md and remove its entry from _build/.jupyter_cache "
        "(`jcache cache -p _build/.jupyter_cache remove ID`)"
    )


# --------------------------------------------------------------------------- what the widgets show


@pytest.mark.parametrize(
    "text, html",
    [
        ("What is a **logit**?", "What is a <strong>logit</strong>?"),
        ("With -1e9 *added* to it", "With -1e9 <em>added</em> to it"),
        ("In numpy: `axis=-1`.", "In numpy: <code>axis=-1</code>."),
        ("**the score $e_{ij}$** here", "<strong>the score $e_{ij}$</strong> here"),
        # Math, code and asterisks that are no emphasis stay as written.
        ("$a * b * c$ and $$x^**$$", "$a * b * c$ and $$x^**$$"),
        ("`x**2` costs `$5`", "<code>x**2</code> costs <code>&#36;5</code>"),
        ("2 * 3 * 4, a*b*c, d_model and d_k", "2 * 3 * 4, a*b*c, d_model and d_k"),
        # Text is text: a < or & is shown, not read as HTML.
        ("a < b & c", "a &lt; b &amp; c"),
        ("$a < b$", "$a &lt; b$"),
    ],
)
def test_markdown_html(text, html):
    assert markdown_html(text) == html


def shown_texts() -> list[tuple[str, str]]:
    """(file name, text) for every text the quizzes and decks show, as prepared for the widgets."""
    texts = []
    for path in QUIZZES:
        for q in prepare_quiz(load_quiz(path)):
            texts.append((path.name, q["question"]))
            texts += [(path.name, a[key]) for a in q["answers"] for key in ("answer", "feedback") if key in a]
    for path in DECKS:
        texts += [(path.name, card[side]) for card in prepare_cards(load_cards(path)) for side in ("front", "back")]
    return texts


MATH = re.compile(r"\$\$.+?\$\$|\$(?:\\.|[^$\\])+\$", re.DOTALL)
CODE = re.compile(r"<code>.*?</code>", re.DOTALL)
RAW_EMPHASIS = re.compile(r"(?<![*\w])\*[^\s*][^*]*?\*(?![*\w])")


def raw_markdown(text: str) -> list[str]:
    """What Markdown a reader would see as typed in a shown text (math and code aside)."""
    seen = html.unescape(re.sub(r"<[^>]+>", "", CODE.sub(" ", MATH.sub(" ", text))))
    return [mark for mark in ("**", "`") if mark in seen] + RAW_EMPHASIS.findall(seen)


def test_no_quiz_or_card_text_shows_raw_markdown():
    raw = [(name, text[:80], found) for name, text in shown_texts() if (found := raw_markdown(text))]
    assert not raw, raw
    # The files do write Markdown, so the check above is not vacuous.
    written = [t for path in QUIZZES + DECKS for t in re.findall(r"\*\*\w+|`\w", path.read_text(encoding="utf-8"))]
    assert written


def test_raw_markdown_check_sees_each_mark():
    assert raw_markdown("a **b** c") == ["**"] and raw_markdown("a `b` c") == ["`"]
    assert raw_markdown("a *b* c") == ["*b*"]
    assert raw_markdown("$a **b** c$ and <code>`x`</code>") == []


SIGNIFICANT = re.compile(r"\((\d+) significant digits?\)")


def numeric_with_precision(path: Path) -> list[dict]:
    return [q for q in load_quiz(path) if q["type"] == "numeric" and "precision" in q]


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.name)
def test_numeric_questions_state_the_precision_they_round_to(path):
    for q, shown in zip(load_quiz(path), prepare_quiz(load_quiz(path)), strict=True):
        if q not in numeric_with_precision(path):
            continue
        text = shown["question"]
        stated = [int(n) for n in SIGNIFICANT.findall(text)]
        assert stated == [q["precision"]], f"{path.name}: {text!r} states {stated}, rounds to {q['precision']}"


def test_the_book_has_numeric_questions_that_round():
    assert sum(len(numeric_with_precision(p)) for p in QUIZZES) >= 10


@pytest.mark.parametrize("path", QUIZ_CHAPTERS, ids=lambda p: p.name)
def test_built_chapter_quiz_states_precision_and_shows_no_raw_markdown(path):
    shown = quizzes_on_page(built_page(f"chapters/{path.name.removesuffix('.quiz.json')}.html"))
    assert shown, f"{path.name}: the built chapter embeds no quiz"
    questions = [q for quiz in shown for q in quiz]
    for q in questions:
        if q["type"] == "numeric" and "precision" in q:
            assert [int(n) for n in SIGNIFICANT.findall(q["question"])] == [q["precision"]], q["question"]
        texts = [q["question"]] + [a[k] for a in q["answers"] for k in ("answer", "feedback") if k in a]
        assert not [t for t in texts if raw_markdown(t)], [t[:80] for t in texts if raw_markdown(t)]
