"""Audit of the quizzes and flashcards of chapters 1-4: every numeric answer
and every number on a card, recomputed independently (plain Python).

Each numeric question is found by the start of its text; the expected value
is computed here and compared with the correct answer in the file at the
question's own precision (significant digits, as jupyterquiz rounds).
"""

from __future__ import annotations

import json
import math
import re
import sys

import pytest
from naive import dot, softmax
from quiz_files import ROOT, accepts, explains_as_a_mistake, question_starting, quiz, significant

# (quiz file, start of the question, independent value)
NUMERIC = [
    ("01_self_attention", "A query may read two positions, with scores 1 and 0", softmax([1, 0])[0]),
    ("01_self_attention", "The scores of one query are 5, 3 and 1", softmax([105, 103, 101])[0]),
    ("01_self_attention", "A query's weights are 0.75 and 0.25", 0.75 * 2 + 0.25 * 6),
    ("01_self_attention", "A soft dictionary has four orthogonal keys", softmax([0, 0, 6, 0])[2]),
    ("02_raw_dot_product_scores", "Compute the raw score", dot((1, 2, 0), (3, -1, 2))),
    ("02_raw_dot_product_scores", "A token vector is $x_i = (3, 4)$", dot((3, 4), (3, 4))),
    (
        "02_raw_dot_product_scores",
        "Two tokens have vectors $x_0 = (1, 0)$",
        softmax([dot((1, 0), (1, 0)), dot((1, 0), (3, 0))])[0],
    ),
    (
        "02_raw_dot_product_scores",
        "The raw score matrix of a six-token sentence",
        sum(1 for i in range(6) for j in range(i, 6)),
    ),
    ("02_raw_dot_product_scores", "Two vectors have lengths", 2 * 3 * math.cos(math.radians(60))),
    (
        "02_raw_dot_product_scores",
        'The sentence "the cat sat on the mat" gets one-hot',
        sum(a == b for a in "the cat sat on the mat".split() for b in "the cat sat on the mat".split()),
    ),
    ("03_queries_keys_values", "In the original Transformer", 512 * 64),
    (
        "03_queries_keys_values",
        "Positions are numbered from 0. Let $x_0 = (1, 0)$",
        # q_1 = x_1 W_Q and k_0 = x_0 W_K, each entry a row times a column of the matrix
        dot([dot((0, 1), col) for col in ((1, 0), (0, 1))], [dot((1, 0), col) for col in ((0, 1), (2, 0))]),
    ),
    ("03_queries_keys_values", "In the same pronoun head", dot((0, 0), (0, 0))),
    ("04_scaled_dot_product_attention", "Keys have width $d_k = 64$", math.sqrt(64)),
    ("04_scaled_dot_product_attention", "A query's scaled scores over three keys", softmax([0, 0, math.log(2)])[2]),
    ("04_scaled_dot_product_attention", "In the study notes' example", softmax([1 / math.sqrt(2), 0])[0]),
    ("04_scaled_dot_product_attention", "The same head on six tokens", softmax([12 / math.sqrt(6)] + [0] * 5)[0]),
]


@pytest.mark.parametrize("name, start, value", NUMERIC, ids=[f"{n[:2]}: {s[:40]}" for n, s, _ in NUMERIC])
def test_numeric_answer_is_the_independent_value(name, start, value):
    found = [q for q in quiz(name) if q["question"].startswith(start)]
    assert len(found) == 1, f"{name}: expected one question starting {start!r}"
    question = found[0]
    right = [a for a in question["answers"] if a["correct"]]
    assert len(right) == 1 and right[0]["type"] == "value"
    digits = question.get("precision", 15)
    assert significant(right[0]["value"], digits) == significant(value, digits), (
        f"{name}: the quiz says {right[0]['value']}, the independent value is {value}"
    )


def test_every_numeric_question_of_chapters_1_to_4_is_audited():
    audited = {(n, s) for n, s, _ in NUMERIC}
    for name in {n for n, _, _ in NUMERIC}:
        for q in quiz(name):
            if q["type"] == "numeric":
                assert any(n == name and q["question"].startswith(s) for n, s in audited), (
                    f"{name}: numeric question not audited: {q['question'][:60]!r}"
                )


def test_soft_dictionary_mc_blend_is_about_34():
    weights = softmax([0, 0, 3, 3])
    output = dot(weights, [10, 20, 30, 40])
    assert round(output) == 34 and round(weights[2], 2) == 0.48
    text = json.dumps(quiz("01_self_attention"))
    assert "about 0.48 each" in text and "output is about 34" in text


def test_ch4_card_toy_weights_and_slip():
    cards = json.loads((ROOT / "chapters" / "04_scaled_dot_product_attention.cards.json").read_text(encoding="utf-8"))
    back = next(c["back"] for c in cards if "2.0281150" in c["back"])
    root = math.exp(1 / math.sqrt(2))
    a0 = root / (root + 1)
    assert f"{root:.7f}" == "2.0281150" and f"{root + 1:.7f}" == "3.0281150"
    assert f"{a0:.7f}" in back and f"{1 - a0:.7f}" in back
    assert f"{abs(0.66974149 - a0):.1e}" == "2.0e-05" and f"{abs(2.66051702 - (4 - 2 * a0)):.1e}" == "4.0e-05"
    assert "2.0e-5" in back and "4.0e-5" in back


def test_ch1_softmax_overflows_above_about_709():
    assert int(math.log(sys.float_info.max)) == 709
    assert f"{sys.float_info.max:.1e}" == "1.8e+308"
    assert "1.8 \\times 10^{308}" in (ROOT / "chapters" / "01_self_attention.md").read_text(encoding="utf-8")
    with pytest.raises(OverflowError):
        math.exp(710)


def test_soft_dictionary_distractor_35_forgets_the_weight_of_score_0():
    weights = softmax([0, 0, 3, 3])
    assert (30 + 40) / 2 == 35 and f"{weights[0]:.3f}" == "0.024"
    assert dot(weights, [10, 20, 30, 40]) < 35
    text = json.dumps(quiz("01_self_attention"))
    assert "Exactly 35, the mean of 30 and 40" in text and "about 0.024 each" in text


def test_ch2_angle_distractor_a_longer_vector_at_60_degrees_outscores_the_self_score():
    x_i = (1.0, 0.0)
    x_j = (3 * math.cos(math.radians(60)), 3 * math.sin(math.radians(60)))  # 3 times as long, at 60 degrees
    ratio = dot(x_i, x_j) / dot(x_i, x_i)
    assert ratio == pytest.approx(1.5)
    question = question_starting("02_raw_dot_product_scores", "When is a token's raw self-score")
    distractor = next(a for a in question["answers"] if "at least 60 degrees" in a["answer"])
    stated = re.search(r"= ([\d.]+)\$ times \$e_\{ii\}\$", distractor["feedback"])  # "3 * 0.5 = 1.5 times e_ii"
    assert not distractor["correct"] and stated and float(stated[1]) == pytest.approx(ratio), distractor


def test_ch4_slip_of_a_weight_moves_the_output_by_the_gap_between_the_values():
    """V = ((1, 0), (7, 2)); a_0 too small by 2.0e-5: the first output component
    a_0 * 1 + (1 - a_0) * 7, and the two one-term mistakes of the distractors."""
    slip, a0 = 2.0e-5, softmax([1 / math.sqrt(2), 0])[0]

    def first(a: float) -> float:
        return a * 1 + (1 - a) * 7

    change = first(a0 - slip) - first(a0)
    assert change > 0 and f"{change:.1e}" == "1.2e-04"
    assert f"{7 * slip:.1e}" == "1.4e-04" and f"{1 * slip:.1e}" == "2.0e-05"
    question = question_starting("04_scaled_dot_product_attention", "A query has two keys")
    options = {a["answer"]: a["correct"] for a in question["answers"]}
    assert options == {
        "Too large by $1.2 \\times 10^{-4}$": True,
        "Too small by $1.2 \\times 10^{-4}$": False,
        "Too large by $1.4 \\times 10^{-4}$": False,
        "Too small by $2.0 \\times 10^{-5}$": False,
    }


# (quiz file, start of the question, the value a named mistake gives): jupyterquiz
# must answer it with the wrong answer written for that mistake. The submission is
# rounded to the question's precision first, as the page does (quiz_files.verdict).
MISTAKES = [
    ("01_self_attention", "A query may read two positions", 0.5),  # equal weights
    ("01_self_attention", "A query may read two positions", 1.0),  # an argmax
    ("01_self_attention", "The scores of one query are 5, 3 and 1", 1.0),  # "large scores are sharper"
    ("01_self_attention", "A query's weights are 0.75 and 0.25", (2 + 6) / 2),  # the plain average
    ("01_self_attention", "A query's weights are 0.75 and 0.25", 0.25 * 2 + 0.75 * 6),  # swapped weights
    ("01_self_attention", "A soft dictionary has four orthogonal keys", 1.0),
    ("01_self_attention", "A soft dictionary has four orthogonal keys", 1 / 4),
    ("02_raw_dot_product_scores", "Compute the raw score", 1 * 3 + 2 * 1 + 0 * 2),  # the sign lost
    ("02_raw_dot_product_scores", "A token vector is $x_i = (3, 4)$", math.hypot(3, 4)),  # the length
    ("02_raw_dot_product_scores", "A token vector is $x_i = (3, 4)$", 3 + 4),
    ("02_raw_dot_product_scores", "Two tokens have vectors $x_0 = (1, 0)$", softmax([1, 3])[1]),  # the other weight
    ("02_raw_dot_product_scores", "Two tokens have vectors $x_0 = (1, 0)$", 1 / (1 + 3)),  # scores over their sum
    (
        "02_raw_dot_product_scores",
        "The raw score matrix of a six-token",
        sum(1 for i in range(6) for j in range(i + 1, 6)),
    ),
    ("02_raw_dot_product_scores", "The raw score matrix of a six-token", 6 * 6),
    ("02_raw_dot_product_scores", "Two vectors have lengths", 2 * 3 * math.cos(0)),
    ("02_raw_dot_product_scores", 'The sentence "the cat sat on the mat"', 6),  # the diagonal only
    ("02_raw_dot_product_scores", 'The sentence "the cat sat on the mat"', 6 + 1),  # one of the two "the" pairs
    ("03_queries_keys_values", "In the original Transformer", 512 + 64),
    ("03_queries_keys_values", "In the original Transformer", 512 * 512),
    # e_01 = q_0 . k_1, the reverse score, and the raw score x_1 . x_0
    ("03_queries_keys_values", "Positions are numbered from 0. Let $x_0 = (1, 0)$", dot((1, 0), (1, 0))),
    ("03_queries_keys_values", "Positions are numbered from 0. Let $x_0 = (1, 0)$", dot((0, 1), (1, 0))),
    ("03_queries_keys_values", "In the same pronoun head", dot((8, 0), (1, 0))),  # e_61, the reverse
    ("04_scaled_dot_product_attention", "Keys have width $d_k = 64$", 64),
    ("04_scaled_dot_product_attention", "A query's scaled scores over three keys", 1 / 3),
    ("04_scaled_dot_product_attention", "In the study notes' example", 0.66974),  # the notes' slip
    ("04_scaled_dot_product_attention", "In the study notes' example", 1 / math.sqrt(2)),  # the score itself
    ("04_scaled_dot_product_attention", "The same head on six tokens", softmax([12] + [0] * 5)[0]),  # scale forgotten
]


@pytest.mark.parametrize("name, start, value", MISTAKES, ids=[f"{n[:2]}: {s[:30]} {v:.4g}" for n, s, v in MISTAKES])
def test_a_named_mistake_gets_its_own_feedback(name, start, value):
    question = question_starting(name, start)
    assert not accepts(question, value) and explains_as_a_mistake(question, value), (
        f"{name}: no wrong answer of {start!r} catches {value}"
    )


def test_the_numeric_answers_are_marked_right_as_the_page_marks_them():
    for name, start, value in NUMERIC:
        assert accepts(question_starting(name, start), value), f"{name}: {start!r} rejects {value}"
