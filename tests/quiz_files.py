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


# A range this wide catches whatever a reader types: the quiz's fallback, not a named mistake.
FALLBACK_WIDTH = 1000


def verdict(question: dict, value: float) -> dict | None:
    """The answer jupyterquiz (js/numeric.js) picks when a reader types ``value``.

    It rounds the submission to the question's precision (significant digits),
    then takes the first answer in file order whose value, rounded the same
    way, is equal, or whose range [low, high) holds it; None when only the
    default feedback applies.
    """
    digits = question.get("precision")
    typed = significant(value, digits) if digits else value
    for answer in question["answers"]:
        if answer["type"] == "value":
            if typed == (significant(answer["value"], digits) if digits else answer["value"]):
                return answer
        elif answer["type"] == "range":
            low, high = answer["range"]
            if low <= typed < high:
                return answer
    return None


def accepts(question: dict, value: float) -> bool:
    """Whether jupyterquiz marks ``value`` right."""
    picked = verdict(question, value)
    return picked is not None and picked["correct"]


def explains_as_a_mistake(question: dict, value: float) -> bool:
    """Whether a wrong answer written for this mistake (not the fallback) catches ``value``."""
    picked = verdict(question, value)
    if picked is None or picked["correct"]:
        return False
    return picked["type"] == "value" or picked["range"][1] - picked["range"][0] < FALLBACK_WIDTH
