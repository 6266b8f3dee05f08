"""Chapter 4's built page shows seed 002's toy example with the exact numbers.

The expected digits are computed here, independently of lib and of the
chapter, by the plain-Python attention of ``tests/naive.py`` (math.exp on
floats). The page must print them in its cell outputs (so they came out of the
chapter's code), and the seed's slipped digits may appear only inside the
admonition that explains the slip and in the code cell that measures it.

The rest of the file audits every other number and claim of the chapter, one
test per claim, each against an independent computation (plain Python in
``tests/naive.py``, or numpy written out here); inputs come from
``lib.examples`` and ``lib.handbuilt``, which hold inputs only.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from chapter_pages import Page, assert_printed, numbers
from naive import naive_attention

from sdpa_course import lib
from sdpa_course.lib import handbuilt

PAGE = "chapters/04_scaled_dot_product_attention.html"

# Seed 002's toy example, typed from the seed: Q (1x2), K (2x2), V (2x2).
TOY_Q = [[1.0, 0.0]]
TOY_K = [[1.0, 0.0], [0.0, 1.0]]
TOY_V = [[2.0, 3.0], [4.0, 5.0]]

# The digits seed 002 prints for the weights and the output (they slip).
SEED_SLIPPED = ("0.66974149", "0.33025851", "2.66051702", "3.66051702")


def exact_digits() -> tuple[list[str], list[str]]:
    """Weights and output of the toy example, formatted to 8 decimals."""
    outputs, weights = naive_attention(TOY_Q, TOY_K, TOY_V)
    return [f"{x:.8f}" for x in weights[0]], [f"{x:.8f}" for x in outputs[0]]


@pytest.fixture(scope="module")
def page() -> Page:
    return Page(PAGE)


@pytest.fixture(scope="module")
def regions(page) -> dict[str, str]:
    return {"output": "\n".join(page.outputs), "admonition": page.notes, "other": page.prose, "input": page.inputs}


def test_the_independent_values_differ_from_the_seeds_digits(regions):
    weights, output = exact_digits()
    assert not set(weights + output) & set(SEED_SLIPPED)
    # The note sets each slipped number beside the exact one, both cut after the
    # first decimal where they part: "(0.66974 against 0.66976)".
    for seed, exact in ((SEED_SLIPPED[0], weights[0]), (SEED_SLIPPED[2], output[0])):
        place = _first_differing_decimal(seed, exact)
        seed_cut, exact_cut = (d[: d.index(".") + 1 + place] for d in (seed, exact))
        assert f"({seed_cut} against {exact_cut})" in regions["admonition"], (seed_cut, exact_cut)


def test_page_prints_the_exact_weights_and_output_in_cell_outputs(regions):
    weights, output = exact_digits()
    printed = regions["output"]
    assert re.search(r"\s+".join(map(re.escape, weights)), printed), (
        f"the weights {weights} are not printed side by side in a cell output of chapter 4"
    )
    assert re.search(r"\s+".join(map(re.escape, output)), printed), (
        f"the output {output} is not printed side by side in a cell output of chapter 4"
    )


def test_seeds_slipped_digits_appear_only_in_the_note_about_the_slip(regions):
    for digits in SEED_SLIPPED:
        assert digits in regions["admonition"], f"the note about the slip does not quote {digits}"
        assert digits in regions["input"], f"the code that measures the slip does not use {digits}"
        for name in ("output", "other"):
            assert digits not in regions[name], f"the seed's slipped {digits} appears outside the note ({name})"


# --------------------------------------------------------------------------- the seed's slip


def _first_differing_decimal(a: str, b: str) -> int:
    return next(p for p, (c, d) in enumerate(zip(a.split(".")[1], b.split(".")[1]), 1) if c != d)


def test_notes_weights_are_off_by_2e_5_from_the_fifth_decimal(page):
    weights, _ = exact_digits()
    error = abs(float(SEED_SLIPPED[0]) - float(weights[0]))
    assert f"{error:.1e}" == "2.0e-05"
    line = page.line_with("absolute error of the notes' weights")
    assert f"{error:.1e}" in line and line.rstrip().endswith(
        f"first wrong decimal: {_first_differing_decimal(SEED_SLIPPED[0], weights[0])}"
    )
    assert _first_differing_decimal(SEED_SLIPPED[0], weights[0]) == 5


def test_notes_outputs_are_off_by_4e_5_from_the_fourth_decimal(page):
    _, output = exact_digits()
    error = abs(float(SEED_SLIPPED[2]) - float(output[0]))
    assert f"{error:.1e}" == "4.0e-05"
    line = page.line_with("absolute error of the notes' outputs")
    assert f"{error:.1e}" in line and line.rstrip().endswith("first wrong decimal: 4")
    assert _first_differing_decimal(SEED_SLIPPED[2], output[0]) == 4
    assert "from the fourth" in page.notes and "from the fifth decimal" in page.notes


def test_slip_note_hand_check_digits(page):
    root = math.exp(1 / math.sqrt(2))
    assert f"{root:.10f}" in page.notes  # 2.0281149816
    assert f"{root / (root + 1):.7f}" in page.notes  # 0.6697615
    assert f"{4 - 2 * float(SEED_SLIPPED[0]):.8f}" == SEED_SLIPPED[2]  # the notes are consistent with their own weight
    assert f"{2.0281 / 3.0281:.5f}" == "0.66976"


def test_toy_predict_dropdown_gap_and_weights(page):
    gap = 1 / math.sqrt(2)
    assert f"{gap:.2f}" == "0.71" and round(math.exp(gap)) == 2
    weights, _ = exact_digits()
    assert f"{float(weights[0]):.2f}" == "0.67" and f"{float(weights[1]):.2f}" == "0.33"
    assert re.search(r"0\.67\W+against\W+0\.33", page.notes)


# --------------------------------------------------------------------------- the random example


def _example():
    tokens, x = lib.example_sentence()
    w = lib.example_projections()
    q, k, v = (x @ w["w_q"]).tolist(), (x @ w["w_k"]).tolist(), (x @ w["w_v"]).tolist()
    return tokens, q, k, v


def test_token_2_weights_and_output_printed(page):
    tokens, q, k, v = _example()
    out, weights = naive_attention(q, k, v)
    line = page.line_with("lib.attend_one_query:")
    assert_printed(numbers(line.split("=")[1]), weights[2], 4)
    line = page.line_with("lib.scaled_dot_product_attention, row 2")
    assert_printed(numbers(line.split("=")[1]), out[2], 4)


def test_weight_matrix_printed_row_by_row(page):
    _, q, k, v = _example()
    _, weights = naive_attention(q, k, v)
    text = page.output_with("row sums:")
    matrix = text.split("row sums:")[0]
    assert_printed(numbers(matrix), [w for row in weights for w in row], 4)


def test_weights_are_fairly_even_largest_on_to_sat(page):
    tokens, q, k, v = _example()
    _, weights = naive_attention(q, k, v)
    flat = [w for row in weights for w in row]
    biggest = max(flat)
    i, j = divmod(flat.index(biggest), len(tokens))
    assert (tokens[i], tokens[j]) == ("on", "sat") and round(biggest, 2) == 0.39
    assert sum(0.09 <= w <= 0.25 for w in flat) > len(flat) / 2  # "most weights"
    assert any("about 0.39" in alt and 'query "on" attending to key "sat"' in alt for alt in page.alts)


def test_sat_bars_cat_and_sat_tallest_then_on(page):
    tokens, q, k, v = _example()
    _, weights = naive_attention(q, k, v)
    order = sorted(range(len(tokens)), key=lambda j: -weights[2][j])
    assert {tokens[order[0]], tokens[order[1]]} == {"cat", "sat"} and tokens[order[2]] == "on"
    tallest = [tokens[j] for j in sorted(order[:2])]
    lowest = sorted(tokens[j] for j in order[3:])
    assert lowest == ["mat", "the", "the"]
    claim = (
        f'The bars for "{tallest[0]}" and "{tallest[1]}" are the tallest, "{tokens[order[2]]}" is a little lower, '
        f'and the two "the" bars and "mat" are the lowest.'
    )
    assert any(claim in alt for alt in page.alts), claim


def test_sat_row_most_negative_at_the_two_the(page):
    tokens, q, k, v = _example()
    scores = [sum(a * b for a, b in zip(q[2], kj)) for kj in k]
    lowest = sorted(range(len(tokens)), key=lambda j: scores[j])[:2]
    assert sorted(lowest) == [0, 4]
    assert [tokens[j] for j in lowest] == ["the", "the"] and all(scores[j] < 0 for j in lowest)
    # The heatmap's row as the page prints it: its two most negative cells are the "the" columns.
    printed = numbers(page.output_with("row 2 equals s_2j from the walk-through").split("row 2")[0])
    row = printed[2 * len(tokens) : 3 * len(tokens)]
    assert_printed(row, [s / math.sqrt(len(q[2])) for s in scores], 4)
    assert sorted(sorted(range(len(tokens)), key=lambda j: row[j])[:2]) == sorted(lowest)
    assert any(
        'The row of query "sat" is outlined; it is most negative in the columns of the two "the" keys.' in alt
        for alt in page.alts
    )


# --------------------------------------------------------------------------- hand-built heads


def _previous_token():
    head = handbuilt.previous_token_head(lib.SENTENCE)
    x = np.asarray(head["x"])
    q, k, v = (x @ head["w_q"]).tolist(), (x @ head["w_k"]).tolist(), (x @ head["w_v"]).tolist()
    return head, naive_attention(q, k, v)


def test_previous_token_scaled_score_is_12_over_root_6(page):
    line = page.line_with("scaled score of the previous position")
    assert line.rstrip().endswith(f"{12 / math.sqrt(6):.3f}")
    assert f"{12 / math.sqrt(6):.2f}" in page.notes  # 4.90


def test_previous_token_weights_printed_and_explained(page):
    head, (out, weights) = _previous_token()
    text = page.output_with("weights A:\n[[0.167")
    matrix = text.split("weights A:")[1].split("output of")[0]
    assert_printed(numbers(matrix), [w for row in weights for w in row], 3)
    for i in range(1, 6):
        assert max(range(6), key=lambda j: weights[i][j]) == i - 1
        assert round(weights[i][i - 1], 2) == 0.96
        assert all(round(weights[i][j], 2) == 0.01 for j in range(6) if j != i - 1)
    assert all(abs(w - 1 / 6) < 1e-12 for w in weights[0])
    assert "0.96" in page.notes and "1/6" in page.notes


def test_previous_token_outputs_carry_the_previous_word(page):
    head, (out, _) = _previous_token()
    vocab = head["vocab"]
    for i in range(1, 6):
        word = vocab[max(range(len(vocab)), key=lambda c: out[i][c])]
        assert word == lib.SENTENCE[i - 1]
        assert (
            f"output of {i} {lib.SENTENCE[i]!r:6}: largest share {max(out[i]):.3f} is the word {word!r}"
            in page.output_with("output of 3")
        )
    assert round(max(out[0]), 3) == round(2 / 6, 3)


def _pronoun():
    head = handbuilt.pronoun_head()
    x = np.asarray(head["x"])
    q, k, v = (x @ head["w_q"]).tolist(), (x @ head["w_k"]).tolist(), (x @ head["w_v"]).tolist()
    return head, naive_attention(q, k, v)


def test_pronoun_it_weights_cat_0_98_and_dogs_0(page):
    head, (out, weights) = _pronoun()
    line = page.line_with("query 'it' weights key 'cat'")
    assert_printed(numbers(line), [weights[6][1], weights[6][4]], 3)
    assert round(weights[6][1], 2) == 0.98 and round(weights[6][4], 2) == 0.0
    assert f"{8 / math.sqrt(2):.2f}" in page.notes  # 5.66


def test_pronoun_other_rows_are_one_eighth(page):
    head, (out, weights) = _pronoun()
    for i in range(8):
        if i != 6:
            assert all(abs(w - 0.125) < 1e-12 for w in weights[i])
    matrix = page.output_with("weights A:\n[[0.125").split("query 'it'")[0]
    assert_printed(numbers(matrix.replace("weights A:", "")), [w for row in weights for w in row], 3)


def test_pronoun_output_of_it_is_mostly_singular_noun(page):
    head, (out, _) = _pronoun()
    line = page.line_with("output of 'it'")
    assert_printed(
        numbers(
            line.split(":", 1)[1]
            .replace("singular noun", "")
            .replace("plural noun", "")
            .replace("singular pronoun", "")
            .replace("plural pronoun", "")
            .replace("other word", "")
        ),
        out[6],
        3,
    )
    assert max(range(5), key=lambda c: out[6][c]) == head["features"].index("singular noun")


def test_walk_through_scores_scale_and_softmax_table(page):
    tokens, q, k, v = _example()
    e = [sum(a * b for a, b in zip(q[2], kj)) for kj in k]
    s = [x / math.sqrt(3) for x in e]
    for j in range(6):
        assert_printed(numbers(page.line_with(f"e_2{j} = q_2 . k_{j}"))[-1:], [e[j]], 4)
        assert_printed(numbers(page.line_with(f"s_2{j} = "))[-1:], [s[j]], 4)
    assert_printed(numbers(page.line_with("sqrt(d_k) = sqrt(3)"))[-1:], [math.sqrt(3)], 4)
    assert_printed(numbers(page.line_with("largest scaled score m")), [max(s)], 4)
    z = [math.exp(x - max(s)) for x in s]
    assert_printed(numbers(page.line_with("sum of exp")), [sum(z), 1.0], 4)


def test_walk_through_output_is_the_weighted_sum_of_values(page):
    tokens, q, k, v = _example()
    out, weights = naive_attention(q, k, v)
    for j in range(6):
        line = page.line_with(f"a_2{j} v_{j} = ")
        assert_printed(numbers(line.split("=", 1)[1]), [weights[2][j], *v[j], *(weights[2][j] * c for c in v[j])], 4)
    assert_printed(numbers(page.line_with("o_2 = sum of the rows above")), [2, *out[2]], 4)


def test_scaled_score_matrix_and_sums(page):
    tokens, q, k, v = _example()
    s = [[sum(a * b for a, b in zip(qi, kj)) / math.sqrt(3) for kj in k] for qi in q]
    text = page.output_with("row 2 equals s_2j from the walk-through")
    assert_printed(numbers(text.split("row 2")[0]), [x for row in s for x in row], 4)
    _, weights = naive_attention(q, k, v)
    text = page.output_with("column sums:")
    assert_printed(numbers(text.split("column sums:")[1]), [sum(r[j] for r in weights) for j in range(6)], 4)
    wrong = page.output_with("softmax along columns")
    cols = [[math.exp(s[i][j]) / sum(math.exp(s[r][j]) for r in range(6)) for j in range(6)] for i in range(6)]
    assert_printed(numbers(wrong.split("row sums")[-1]), [sum(row) for row in cols], 4)


def test_output_matrix_printed(page):
    tokens, q, k, v = _example()
    out, _ = naive_attention(q, k, v)
    text = page.output_with("O =\n")
    assert_printed(numbers(text.split("O =")[1].split("shape")[0]), [x for row in out for x in row], 4)


def test_toy_example_intermediate_lines(page):
    s = 1 / math.sqrt(2)
    toy = page.output_with("exp of the scaled scores")

    def line(start: str) -> list[float]:
        return numbers(next(l for l in toy.splitlines() if l.startswith(start))[len(start) :])

    assert_printed(line("Q K^T "), [1.0, 0.0], 8)
    assert_printed(line("sqrt(d_k) "), [math.sqrt(2)], 8)
    assert_printed(line("Q K^T / sqrt(d_k)"), [s, 0.0], 8)
    assert_printed(line("exp of the scaled scores"), [math.exp(s), 1.0], 8)
    assert_printed(line("sum of the exps"), [math.exp(s) + 1], 8)


def test_pronoun_head_fails_when_both_nouns_are_singular(page):
    # "Both keys match the query equally, so they get equal weights, 0.495 each.
    # The output still says "singular noun", but not which one: half cat, half dog."
    head = handbuilt.pronoun_head(("the", "cat", "saw", "the", "dog", "and", "it", "ran"))
    x = np.asarray(head["x"])
    out, weights = naive_attention(*((x @ head[m]).tolist() for m in ("w_q", "w_k", "w_v")))
    assert weights[6][1] == weights[6][4]
    # e^(8/sqrt 2) / (2 e^(8/sqrt 2) + 6), written out
    share = math.exp(8 / math.sqrt(2)) / (2 * math.exp(8 / math.sqrt(2)) + 6)
    assert weights[6][1] == pytest.approx(share, rel=1e-12) and round(share, 3) == 0.495
    line = page.line_with("two singular nouns: 'it' weights 'cat'")
    assert_printed(numbers(line), [weights[6][1], weights[6][4]], 3)
    received = page.line_with("what 'it' receives:").split(":", 1)[1]
    for feature in head["features"]:
        received = received.replace(feature, "")
    assert_printed(numbers(received), out[6], 3)
    assert max(range(5), key=lambda c: out[6][c]) == head["features"].index("singular noun")
