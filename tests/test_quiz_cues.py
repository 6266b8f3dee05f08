"""The surface of an option does not give away the right answer.

The options of every quiz are shuffled on each page load, so position teaches
nothing; what is left for a test-wise reader is the surface of the options.
Over all single-answer questions of all chapters' quizzes
(``chapters/*.quiz.json``, type ``multiple_choice`` with one right option),
three cues are measured:

* **longest**: the right option is the longest (in characters);
* **shortest**: the right option is the shortest;
* **stem words**: the right option shares the most words with the question.

A question hits a cue with weight 1 when the right option alone holds the
extreme, 1/k when k options share it and the right one is among them, 0
otherwise. A cue's rate is the mean weight over the questions. Guessing blindly
hits with probability 1/(number of options), so chance is the mean of that over
the same questions. Every cue's rate must stay within chance + 10 points.

Words, for the stem-words cue: the text is lowercased, TeX commands
(``\\times``, ``\\text``...) are dropped, the remaining runs of letters and
digits are the tokens, and the stop words below are ignored. An option's
overlap is the number of its distinct words that occur in the question.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sdpa_course.teaching.study import load_quiz

ROOT = Path(__file__).resolve().parents[1]
QUIZZES = sorted(ROOT.glob("chapters/*.quiz.json"))
MARGIN = 0.10

# Function words that carry no content in either a stem or an option.
STOP_WORDS = frozenset(
    """a an the of to in on at by for from with and or but not no is are was were be been it its
    this that these those as than then so do does what which who when where why how there their
    they them each every all any one""".split()
)


def words(text: str) -> set[str]:
    """The distinct content words of a text, as defined in the module docstring."""
    text = re.sub(r"\\[A-Za-z]+", " ", text.lower())
    return {w for w in re.findall(r"[a-z0-9]+", text) if w not in STOP_WORDS}


@dataclass(frozen=True)
class Question:
    where: str
    stem: str
    options: tuple[str, ...]
    right: int


def single_answer_questions(paths: list[Path]) -> list[Question]:
    found = []
    for path in paths:
        for n, q in enumerate(load_quiz(path), 1):
            rights = [i for i, a in enumerate(q["answers"]) if a["correct"]]
            if q["type"] == "multiple_choice" and len(rights) == 1:
                options = tuple(a["answer"] for a in q["answers"])
                found.append(Question(f"{path.name.split('_')[0]} Q{n}", q["question"], options, rights[0]))
    return found


def hit(scores: list[float], right: int, pick: Callable[[list[float]], float]) -> float:
    """1/k when the right option is one of the k options whose score is the extreme ``pick`` chooses."""
    best = pick(scores)
    tied = [i for i, s in enumerate(scores) if s == best]
    return 1 / len(tied) if right in tied else 0.0


CUES: dict[str, Callable[[Question], float]] = {
    "longest": lambda q: hit([len(o) for o in q.options], q.right, max),
    "shortest": lambda q: hit([len(o) for o in q.options], q.right, min),
    "stem words": lambda q: hit([len(words(o) & words(q.stem)) for o in q.options], q.right, max),
}


@dataclass(frozen=True)
class CueRate:
    cue: str
    rate: float
    chance: float
    hits: tuple[str, ...]


def cue_table(questions: list[Question]) -> list[CueRate]:
    chance = sum(1 / len(q.options) for q in questions) / len(questions)
    table = []
    for name, cue in CUES.items():
        weights = [(q.where, cue(q)) for q in questions]
        rate = sum(w for _, w in weights) / len(questions)
        hits = tuple(f"{where}" + ("" if w == 1 else f" ({w:.2f})") for where, w in weights if w > 0)
        table.append(CueRate(name, rate, chance, hits))
    return table


def format_table(table: list[CueRate], count: int) -> str:
    lines = [f"{count} single-answer questions", f"{'cue':<11} {'rate':>6} {'chance':>7}  questions that hit"]
    for row in table:
        lines.append(f"{row.cue:<11} {row.rate:>6.1%} {row.chance:>7.1%}  {', '.join(row.hits)}")
    return "\n".join(lines)


def test_no_surface_cue_beats_chance_by_more_than_ten_points():
    questions = single_answer_questions(QUIZZES)
    assert len(questions) >= 20, f"only {len(questions)} single-answer questions found"
    table = cue_table(questions)
    too_high = [row.cue for row in table if row.rate > row.chance + MARGIN]
    assert not too_high, f"cues above chance + {MARGIN:.0%}: {too_high}\n" + format_table(table, len(questions))


# --------------------------------------------------------------------------- the measure itself


def q(stem: str, options: list[str], right: int) -> Question:
    return Question("x", stem, tuple(options), right)


def test_a_strictly_longest_right_option_counts_one_and_a_tie_counts_one_over_k():
    assert CUES["longest"](q("?", ["aaaa", "bb", "c"], 0)) == 1
    assert CUES["longest"](q("?", ["aaaa", "bbbb", "c"], 0)) == 0.5
    assert CUES["longest"](q("?", ["aaaa", "bb", "c"], 1)) == 0
    assert CUES["shortest"](q("?", ["aaaa", "bb", "c"], 2)) == 1
    assert CUES["shortest"](q("?", ["aaaa", "b", "c", "d"], 1)) == pytest.approx(1 / 3)


def test_stem_words_ignore_case_tex_and_stop_words():
    assert words(r"The $\sqrt{d_k}$ of the Keys") == {"d", "k", "keys"}
    stem = "Which keys may the query read?"
    assert CUES["stem words"](q(stem, ["the keys it may read", "the values", "nothing at all"], 0)) == 1
    assert CUES["stem words"](q(stem, ["the values", "the keys it may read", "nothing at all"], 0)) == 0


def test_a_quiz_whose_right_answer_is_always_longest_fails_and_the_table_names_it():
    questions = [q("?", ["the right and long one", "short", "tiny"], 0)] * 10
    table = {row.cue: row for row in cue_table(questions)}
    assert table["longest"].rate == 1 and table["longest"].chance == pytest.approx(1 / 3)
    assert table["longest"].rate > table["longest"].chance + MARGIN
    assert "longest" in format_table(list(table.values()), 10) and "x" in table["longest"].hits[0]
