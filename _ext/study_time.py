"""How long a chapter or a homework takes, estimated from its length.

The welcome page's map (``_ext/course_toc.py``) shows these estimates, and the
sentence under the map says how they are made, from the constants below: an
estimate, not a measurement, the same for every page, so that pages can be
compared and the course's total planned.

- A chapter: its prose at ``WORDS_PER_MINUTE`` (slower than the 200 a minute
  usual for plain text: the text has formulas to follow), ``CODE_CELL_MINUTES``
  for each code cell it shows (read it, run it, read what it prints), and
  ``QUIZ_QUESTION_MINUTES`` and ``FLASHCARD_MINUTES`` for each question of its
  quiz and each card of its deck.
- A homework: its statement at the same speed, and ``ANSWER_CELL_MINUTES`` for
  each cell the learner writes code in (nbgrader's solution cells).

Both are rounded up to ``ROUND_TO`` minutes.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

WORDS_PER_MINUTE = 150
CODE_CELL_MINUTES = 1.0
QUIZ_QUESTION_MINUTES = 1.0
FLASHCARD_MINUTES = 0.5
ANSWER_CELL_MINUTES = 15.0
ROUND_TO = 5

FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?P<body>.*?)^```\s*$", re.DOTALL | re.MULTILINE)
HIDDEN = re.compile(r"^:tags:\s*\[[^\]]*\b(?:remove-input|remove-cell)\b", re.MULTILINE)
STUDY_FILE = re.compile(r"""show_(?P<kind>quiz|cards)\(\s*["'](?P<name>[^"']+)["']""")
WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)


def _rounded(minutes: float) -> int:
    return max(ROUND_TO, ROUND_TO * math.ceil(minutes / ROUND_TO))


def words(markdown: str) -> int:
    """The words of a Markdown text, each formula counted as one word."""
    return len(WORD.findall(MATH.sub(" formula ", markdown)))


def study_files(page: Path) -> list[Path]:
    """The quiz and flashcard files a chapter page shows (``show_quiz("...")``, ``show_cards("...")``)."""
    return [page.parent / m["name"] for m in STUDY_FILE.finditer(page.read_text(encoding="utf-8"))]


def chapter_parts(page: Path) -> dict[str, int]:
    """What a chapter page holds: ``words`` of prose, shown ``code_cells``, ``quiz_questions``, ``flashcards``."""
    text = FRONT_MATTER.sub("", page.read_text(encoding="utf-8"))
    shown = [m["body"] for m in CODE_CELL.finditer(text) if not HIDDEN.search(m["body"])]
    counts = {"quiz": 0, "cards": 0}
    for m in STUDY_FILE.finditer(text):
        counts[m["kind"]] += len(json.loads((page.parent / m["name"]).read_text(encoding="utf-8")))
    return {
        "words": words(CODE_CELL.sub("", text)),
        "code_cells": len(shown),
        "quiz_questions": counts["quiz"],
        "flashcards": counts["cards"],
    }


def chapter_minutes(page: Path) -> int:
    """The estimated minutes of a chapter (see the module's docstring)."""
    parts = chapter_parts(page)
    minutes = (
        parts["words"] / WORDS_PER_MINUTE
        + parts["code_cells"] * CODE_CELL_MINUTES
        + parts["quiz_questions"] * QUIZ_QUESTION_MINUTES
        + parts["flashcards"] * FLASHCARD_MINUTES
    )
    return _rounded(minutes)


def homework_parts(notebook: Path) -> dict[str, int]:
    """What a homework notebook holds: ``words`` of its Markdown cells and its ``answer_cells``."""
    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    text = "\n".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown")
    answers = sum(1 for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    return {"words": words(text), "answer_cells": answers}


def homework_minutes(notebook: Path) -> int:
    """The estimated minutes of a homework (see the module's docstring)."""
    parts = homework_parts(notebook)
    return _rounded(parts["words"] / WORDS_PER_MINUTE + parts["answer_cells"] * ANSWER_CELL_MINUTES)


def how_estimated() -> str:
    """One sentence for readers: how the times are estimated, from the constants above."""
    return (
        f"The times are estimates made when the book is built, from each page's length: a chapter's text at "
        f"{WORDS_PER_MINUTE} words a minute, {CODE_CELL_MINUTES:g} minute for each code cell it shows, "
        f"{QUIZ_QUESTION_MINUTES:g} for each quiz question and {FLASHCARD_MINUTES:g} for each flashcard; a "
        f"homework's text at the same speed and {ANSWER_CELL_MINUTES:g} minutes for each cell you write code in; "
        f"rounded up to {ROUND_TO} minutes."
    )
