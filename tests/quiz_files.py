"""Reading the chapters' quiz files in tests that recompute their answers."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quiz(name: str) -> list[dict]:
    """The questions of ``chapters/<name>.quiz.json``."""
    return json.loads((ROOT / "chapters" / f"{name}.quiz.json").read_text(encoding="utf-8"))


def significant(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` significant digits, as jupyterquiz compares numbers."""
    return float(f"{x:.{digits}g}")


def question_starting(name: str, start: str) -> dict:
    """The one question of the quiz whose text starts with ``start``."""
    found = [q for q in quiz(name) if q["question"].startswith(start)]
    assert len(found) == 1, f"{name}: expected one question starting {start!r}, found {len(found)}"
    return found[0]


def right_option(name: str, start: str) -> dict:
    """The one correct answer of that question."""
    right = [a for a in question_starting(name, start)["answers"] if a["correct"]]
    assert len(right) == 1, f"{name}: {start!r} has {len(right)} correct answers"
    return right[0]


def accepts(question: dict, value: float) -> bool:
    """Whether jupyterquiz marks ``value`` right: it rounds both to the question's precision."""
    right = [a for a in question["answers"] if a["correct"]]
    assert len(right) == 1, question["question"][:60]
    answer = right[0]
    if answer["type"] == "range":
        low, high = answer["range"]
        return low <= value <= high
    digits = question.get("precision", 15)
    return significant(answer["value"], digits) == significant(value, digits)
