"""Every quiz and flashcard file of the book is well-formed, and the checker
catches the mistakes it exists to catch."""

import json
from pathlib import Path

import pytest

from teaching.study import StudyDataError, load_cards, load_quiz

ROOT = Path(__file__).resolve().parents[1]
QUIZZES = sorted(ROOT.glob("chapters/*.quiz.json"))
DECKS = sorted(ROOT.glob("chapters/*.cards.json"))


@pytest.mark.parametrize("path", QUIZZES, ids=lambda p: p.name)
def test_quiz_file_is_valid_and_mixes_question_types(path):
    questions = load_quiz(path)
    assert len(questions) >= 4
    kinds = {q["type"] for q in questions}
    assert "numeric" in kinds and kinds & {"multiple_choice", "many_choice"}


@pytest.mark.parametrize("path", DECKS, ids=lambda p: p.name)
def test_flashcard_file_is_valid(path):
    assert len(load_cards(path)) >= 3


GOOD = {"question": "2+2?", "type": "numeric", "precision": 1,
        "answers": [{"type": "value", "value": 4, "correct": True, "feedback": "Yes."}]}


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
