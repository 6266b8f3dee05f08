"""Quizzes (jupyterquiz) and flashcards (jupytercards) from data files.

Each chapter keeps its questions in ``<chapter>.quiz.json`` and its cards in
``<chapter>.cards.json`` beside it. The files are checked before they are
shown, so a malformed question fails the book's build instead of silently
rendering wrong.
"""

from __future__ import annotations

import copy
import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

__all__ = [
    "load_quiz",
    "load_cards",
    "prepare_quiz",
    "prepare_cards",
    "markdown_html",
    "precision_note",
    "show_quiz",
    "show_cards",
    "question_id",
    "card_id",
    "chapter_title",
    "study_catalog",
    "catalog_script",
    "QUESTION_TYPES",
    "QUIZ_DISPLAY",
]

QUESTION_TYPES = ("multiple_choice", "many_choice", "numeric")

# Colours with a contrast of at least 4.5:1 against the packages' near-white
# text (WCAG AA; checked by axe-core in tests/test_browser_pages.py).
# The packages' defaults fall short: the many-choice orange (3.1:1), the
# flashcards' green, red and cyan fronts (2.0 to 2.6:1).
QUIZ_COLORS = {"--jq-many-choice-bg": "#a84300", "--jq-correct-color": "#006b0e"}
CARD_FRONT_COLORS = ["#3f6b35", "#a63d2a", "#1a6d94"]
CARD_BACK_COLORS = ["#4a4e69"]


class StudyDataError(ValueError):
    """A quiz or flashcard file is malformed; the message names the file and item."""


def _read(path: str | Path) -> Any:
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StudyDataError(f"{p}: no such file") from None
    except json.JSONDecodeError as err:
        raise StudyDataError(f"{p}: not valid JSON ({err})") from None


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise StudyDataError(f"{where}: {what}")


def load_quiz(path: str | Path) -> list[dict]:
    """Read and check a jupyterquiz file.

    Every question needs text, a known type and answers; every answer needs
    feedback; at least one answer is correct. A numeric question's correct
    answer is a ``value`` (with the question's ``precision``) or a ``range``.
    """
    data = _read(path)
    _need(isinstance(data, list) and bool(data), str(path), "must be a non-empty list of questions")
    for n, q in enumerate(data, 1):
        where = f"{path}, question {n}"
        _need(isinstance(q, dict), where, "must be an object")
        _need(bool(str(q.get("question", "")).strip()), where, "has no question text")
        _need(q.get("type") in QUESTION_TYPES, where, f"type must be one of {QUESTION_TYPES}, got {q.get('type')!r}")
        answers = q.get("answers")
        _need(isinstance(answers, list) and len(answers) >= 1, where, "has no answers")
        for m, a in enumerate(answers, 1):
            _need(isinstance(a, dict), f"{where}, answer {m}", "must be an object")
            _need(bool(str(a.get("feedback", "")).strip()), f"{where}, answer {m}", "has no feedback")
            _need(isinstance(a.get("correct"), bool), f"{where}, answer {m}", "needs correct: true or false")
            if q["type"] == "numeric":
                kind = a.get("type")
                _need(
                    kind in ("value", "range", "default"),
                    f"{where}, answer {m}",
                    "numeric answers are of type value, range or default",
                )
                if kind == "value":
                    _need(isinstance(a.get("value"), (int, float)), f"{where}, answer {m}", "needs a numeric value")
                if kind == "range":
                    r = a.get("range")
                    _need(
                        isinstance(r, list) and len(r) == 2 and r[0] <= r[1],
                        f"{where}, answer {m}",
                        "range must be [low, high]",
                    )
            else:
                _need(bool(str(a.get("answer", "")).strip()), f"{where}, answer {m}", "has no answer text")
        _need(any(a["correct"] for a in answers), where, "has no correct answer")
        if q["type"] != "numeric":
            # The learner's progress finds a shown option by its feedback (see _quiz_marker).
            feedback = [a["feedback"] for a in answers]
            _need(len(set(feedback)) == len(feedback), where, "two answers have the same feedback")
        if q["type"] == "numeric" and "precision" in q:
            # jupyterquiz rounds to this many significant digits with JavaScript's
            # toPrecision, which throws for 0: the question could never be answered.
            p = q["precision"]
            _need(
                isinstance(p, int) and not isinstance(p, bool) and 1 <= p <= 21,
                where,
                f"precision is a number of significant digits, 1 to 21; got {p!r}",
            )
    return data


def load_cards(path: str | Path) -> list[dict]:
    """Read and check a jupytercards file: a list of cards with front and back."""
    data = _read(path)
    _need(isinstance(data, list) and bool(data), str(path), "must be a non-empty list of cards")
    for n, card in enumerate(data, 1):
        where = f"{path}, card {n}"
        _need(isinstance(card, dict), where, "must be an object")
        for side in ("front", "back"):
            _need(bool(str(card.get(side, "")).strip()), where, f"has no {side}")
    return data


# The widgets put text into the page as HTML and turn $...$ into MathJax, but
# read no Markdown. The conversion is a small one written here, not a Markdown
# library: the chapters also run in the in-browser Python (JupyterLite), which
# holds only the wheels the site locks (_ext/lite/wheels.py).
_PROTECTED = re.compile(
    r"`(?P<code>[^`]+)`"  # a code span: its text shown as written
    r"|(?P<math>\$\$.+?\$\$|(?<!\\)\$(?:\\.|[^$\\])+\$)",  # $$...$$ or $...$, left to MathJax
    re.DOTALL,
)
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.DOTALL)
_EM = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*]+?)(?<=[^\s*])\*(?![*\w])")
_SLOT = re.compile(r"\x00(\d+)\x00")


def markdown_html(text: str) -> str:
    """Quiz or card text, written in a little Markdown, as HTML.

    ``**bold**`` becomes ``<strong>``, ``*italic*`` ``<em>`` (an asterisk
    inside a word, or with a space after it, stays as written), and a
    `` `code span` `` ``<code>``. Math between ``$`` or ``$$`` is kept as it
    is for MathJax (HTML-escaped, which MathJax reads back as the same text);
    everything else is plain text, HTML-escaped. Underscores are not
    emphasis: they stand in names such as d_model.

    >>> markdown_html("What is a **logit**, and *why* `z**2`? $a * b < c$")
    'What is a <strong>logit</strong>, and <em>why</em> <code>z**2</code>? $a * b &lt; c$'
    """
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        if match["code"] is not None:
            # A $ inside code is no math delimiter: hide it from the widgets' $-scan.
            kept.append("<code>" + html.escape(match["code"], quote=False).replace("$", "&#36;") + "</code>")
        else:
            kept.append(html.escape(match["math"], quote=False))
        return f"\x00{len(kept) - 1}\x00"

    out = html.escape(_PROTECTED.sub(keep, text), quote=False)
    out = _STRONG.sub(r"<strong>\1</strong>", out)
    out = _EM.sub(r"<em>\1</em>", out)
    return _SLOT.sub(lambda m: kept[int(m[1])], out)


def precision_note(question: dict) -> str:
    """What a numeric question that rounds the reader's answer says about it.

    jupyterquiz rounds the answer typed to the question's ``precision``
    significant digits before comparing; without saying so, 0.73 is
    "incorrect" where 0.731 was wanted.

    >>> precision_note({"type": "numeric", "precision": 3})
    '(3 significant digits)'
    >>> precision_note({"type": "numeric", "precision": 1}), precision_note({"type": "numeric"})
    ('(1 significant digit)', '')
    """
    digits = question.get("precision") if question.get("type") == "numeric" else None
    if not digits:
        return ""
    return f"({digits} significant digit{'' if digits == 1 else 's'})"


def prepare_quiz(questions: list[dict]) -> list[dict]:
    """The questions as the quiz shows them: Markdown turned into HTML, and each
    numeric question that rounds saying how many significant digits it wants
    (unless its text already says so). The input is not changed."""
    shown = copy.deepcopy(questions)
    for q in shown:
        note = precision_note(q)
        text = markdown_html(q["question"])
        if note and note.lower() not in q["question"].lower():
            text = f"{text.rstrip()} {note}"
        q["question"] = text
        for a in q["answers"]:
            for key in ("answer", "feedback"):
                if isinstance(a.get(key), str):
                    a[key] = markdown_html(a[key])
    return shown


def prepare_cards(cards: list[dict]) -> list[dict]:
    """The cards as the deck shows them: Markdown turned into HTML. The input is not changed."""
    return [{**card, "front": markdown_html(card["front"]), "back": markdown_html(card["back"])} for card in cards]


#: How every quiz is displayed: questions in file order, the options of each
#: multiple-choice question in a fresh random order on every page load, so the
#: position of the right answer teaches nothing.
QUIZ_DISPLAY: dict[str, Any] = {"shuffle_questions": False, "shuffle_answers": True}


def show_quiz(path: str | Path, **options: Any) -> None:
    """Check the quiz file, then display it (see :func:`prepare_quiz`) with
    :data:`QUIZ_DISPLAY` (answers shuffled)."""
    from IPython.display import HTML, display
    from jupyterquiz import display_quiz

    questions = load_quiz(path)
    shown = prepare_quiz(questions)
    display(HTML(_quiz_marker(_deck_name(path, ".quiz.json"), questions, shown)))
    display_quiz(shown, **{**QUIZ_DISPLAY, "colors": QUIZ_COLORS, **options})


def show_cards(path: str | Path, **options: Any) -> None:
    """Check the flashcard file, then display the deck (see :func:`prepare_cards`)."""
    from jupytercards import display_flashcards

    display_flashcards(
        prepare_cards(load_cards(path)),
        **{"front_colors": CARD_FRONT_COLORS, "back_colors": CARD_BACK_COLORS, **options},
    )


# --------------------------------------------------------------------------- progress
#
# The learner's progress lives in the browser only (_static/progress.js keeps it
# in localStorage). The pages tell that script what they hold: each quiz is
# preceded by a JSON description of its questions, and the site holds the
# catalogue of every chapter's questions and cards (catalog_script). Questions
# and cards are known by ids made from their text, never by position: the quiz
# shuffles its options on every load, and a card added to a deck must not take
# over another card's schedule.


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def question_id(question: dict) -> str:
    """A question's id: its ``id`` field if it has one, else a digest of its text."""
    given = question.get("id")
    return str(given) if given else "q" + _digest(question["question"])


def card_id(card: dict) -> str:
    """A card's id: its ``id`` field if it has one, else a digest of its front."""
    given = card.get("id")
    return str(given) if given else "c" + _digest(card["front"])


def _deck_name(path: str | Path, suffix: str) -> str:
    return Path(path).name.removesuffix(suffix)


def _unique(ids: list[str], where: str, what: str) -> None:
    seen = [i for i in ids if ids.count(i) > 1]
    _need(not seen, where, f'two {what} have the same id {seen[0] if seen else ""!r} (give one an "id")')


def _json_for_script(data: Any) -> str:
    """JSON that can stand inside a <script> element (no "</" ends it early)."""
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/")


def _quiz_marker(chapter: str, questions: list[dict], shown: list[dict]) -> str:
    """What progress.js needs to store and restore the answers of the quiz displayed next.

    Each option is described by its text as written in the file (what is
    stored) and by its feedback as the widget puts it on the option (how
    the script finds the option on the page, whatever order it is shown in).
    """
    ids = [question_id(q) for q in questions]
    _unique(ids, f"quiz of {chapter}", "questions")
    described = []
    for source, q, qid in zip(questions, shown, ids, strict=True):
        options = [
            {"text": a.get("answer", ""), "feedback": b.get("feedback", ""), "correct": a["correct"]}
            for a, b in zip(source["answers"], q["answers"], strict=True)
        ]
        described.append({"id": qid, "type": q["type"], "options": options if q["type"] != "numeric" else []})
    data = {"chapter": chapter, "questions": described}
    return f'<script type="application/json" class="study-quiz-data">{_json_for_script(data)}</script>'


def chapter_title(page: Path) -> str:
    """ "Chapter N: title" of a chapter page (``NN_name.md``): its first ``# `` heading."""
    number = int(page.name.split("_", 1)[0])
    lines = page.read_text(encoding="utf-8").splitlines()
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), None)
    _need(title is not None, str(page), "has no '# ' title")
    return f"Chapter {number}: {title}"


def study_catalog(chapters: str | Path, with_text: bool = False) -> list[dict]:
    """Every chapter with a quiz or flashcards, in chapter order.

    Each entry names the chapter (``chapter``, the file name's stem), its
    title, its page relative to the site root, its question ids and its
    cards (ids, ``<chapter>:<card_id>``; with ``with_text``, also the front
    and back as HTML).
    """
    folder = Path(chapters)
    catalog = []
    for page in sorted(folder.glob("[0-9][0-9]_*.md")):
        name = page.stem
        quiz, deck = folder / f"{name}.quiz.json", folder / f"{name}.cards.json"
        if not quiz.is_file() and not deck.is_file():
            continue
        questions = load_quiz(quiz) if quiz.is_file() else []
        cards = load_cards(deck) if deck.is_file() else []
        # Two chapters may hold a card with the same front: the chapter is part of its id.
        card_ids = [f"{name}:{card_id(c)}" for c in cards]
        _unique(card_ids, str(deck), "cards")
        _unique([question_id(q) for q in questions], str(quiz), "questions")
        shown_cards = prepare_cards(cards)
        catalog.append(
            {
                "chapter": name,
                "title": chapter_title(page),
                "page": f"chapters/{name}.html",
                "questions": [question_id(q) for q in questions],
                "cards": [
                    {"id": i, **({"front": c["front"], "back": c["back"]} if with_text else {})}
                    for i, c in zip(card_ids, shown_cards, strict=True)
                ],
            }
        )
    return catalog


def catalog_script(chapters: str | Path) -> str:
    """The catalogue (with the cards' text) as a script for the site: ``window.STUDY_CATALOG = [...]``.

    _ext/offline_site.py writes it to ``_static/study/catalog.js`` at every build, so
    the progress and review pages always list the current questions and cards.
    """
    return f"window.STUDY_CATALOG = {_json_for_script(study_catalog(chapters, with_text=True))};\n"
