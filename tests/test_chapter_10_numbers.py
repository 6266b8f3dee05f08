"""Chapter 10's numbers and claims, recomputed without lib's block.

The inputs are the chapter's inputs (``lib.example_sentence`` and the weights
``lib.random_block_weights`` draws: inputs only, no results). LayerNorm, the
feed-forward layer, attention and the block are recomputed with the plain
Python loops of ``tests/naive.py`` and compared with the numbers the built
page prints. One test per claim.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from chapter_pages import Page, assert_printed, numbers
from glued import glued
from naive import layer_norm_row, matmul, naive_attention, naive_block

from sdpa_course import lib
from sdpa_course.teaching.block_diagram import POST_LN_STEPS, PRE_LN_STEPS

CHAPTER = "chapters/10_attention_in_its_block.html"
D_MODEL, D_FF, HEADS = 8, 32, 2


@pytest.fixture(scope="module")
def page() -> Page:
    return Page(CHAPTER)


@pytest.fixture(scope="module")
def glue() -> dict[str, object]:
    return glued("chapters/10_attention_in_its_block")


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return lib.example_sentence(d_model=D_MODEL)[1]


@pytest.fixture(scope="module")
def weights() -> lib.BlockWeights:
    return lib.random_block_weights(D_MODEL, D_FF, seed=10)


def lists(w: lib.BlockWeights) -> dict:
    return {f.name: getattr(w, f.name).tolist() for f in dataclasses.fields(w)}


def length(row) -> float:
    return math.sqrt(sum(v * v for v in row))


def mean_length(rows) -> float:
    return sum(length(r) for r in rows) / len(rows)


def test_sizes(page):
    # n, d_model, h, d_k, d_ff
    assert numbers(page.line_with("n = 6 tokens")) == [6, D_MODEL, HEADS, D_MODEL // HEADS, D_FF]
    assert "W_1: (8, 32)  W_2: (32, 8)" in page.line_with("W_Q, W_K, W_V, W_O: (8, 8)")


def test_silent_sub_layers_give_the_input_back_in_pre_ln_only(page, x, weights):
    silent = lists(weights)
    silent["w_o"] = [[0.0] * D_MODEL for _ in range(D_MODEL)]
    silent["w_2"] = [[0.0] * D_MODEL for _ in range(D_FF)]
    silent["b_2"] = [0.0] * D_MODEL
    assert naive_block(x.tolist(), silent, HEADS) == x.tolist()
    assert page.line_with("pre-LN, silent sub-layers").strip().endswith("True")
    # post-LN: LN(x + 0) = LN(x), which is not x
    post = naive_block(x.tolist(), silent, HEADS, norm="post")
    assert max(abs(a - b) for r, s in zip(post, x.tolist()) for a, b in zip(r, s)) > 0.1
    assert page.line_with("post-LN, silent sub-layers").strip().endswith("False")


def test_the_starting_weights_change_each_row_by_about_its_length(page, x, weights, glue):
    out = naive_block(x.tolist(), lists(weights), HEADS)
    change = [length([a - b for a, b in zip(o, r)]) / length(r) for o, r in zip(out, x.tolist())]
    assert_printed(numbers(page.line_with("with the starting weights").split("by", 1)[1]), change, 2)
    assert glue["change_min"] == pytest.approx(min(change), rel=1e-9)
    assert glue["change_max"] == pytest.approx(max(change), rel=1e-9)
    assert min(change) > 0.5  # "not silent": far from the identity


def test_a_layer_norm_row_is_shorter_when_its_variance_is_near_eps():
    """``sqrt(d sigma^2 / (sigma^2 + eps))``: a hair less than sqrt(d), much less near eps, 0 when constant."""
    for spread in (1.0, 1e-2, 3e-3, 1e-3):
        row = (spread * np.random.default_rng(1).standard_normal(16)).tolist()
        var = sum((v - sum(row) / 16) ** 2 for v in row) / 16
        assert length(layer_norm_row(row)) == pytest.approx(math.sqrt(16 * var / (var + 1e-5)), rel=1e-9)
        np.testing.assert_allclose(np.linalg.norm(lib.layer_norm(row)), math.sqrt(16 * var / (var + 1e-5)), rtol=1e-9)
    assert np.linalg.norm(lib.layer_norm(np.full(16, 3.0))) == 0.0


def test_layer_norm_of_cat_step_by_step(page, x):
    row = x[1].tolist()
    d = len(row)
    mu = sum(row) / d
    var = sum((v - mu) ** 2 for v in row) / d
    z = layer_norm_row(row)
    assert_printed(numbers(page.line_with("x_cat:  ")), row, 4)
    assert_printed(numbers(page.line_with("mean ")), [mu, var], 4)
    assert_printed(numbers(page.line_with("normalised:")), z, 4)
    assert_printed(numbers(page.line_with("lib.layer_norm:")), z, 4)
    assert_printed(numbers(page.line_with("length of x_cat")), [length(row), length(z), math.sqrt(8)], 4)


def test_layer_norm_length_is_sqrt_d_model_at_512(page, glue):
    rows = np.random.default_rng(0).normal(loc=3.0, scale=7.0, size=(1000, 512)).tolist()
    inputs = [length(r) for r in rows]
    outputs = [length(layer_norm_row(r)) for r in rows]
    assert_printed(numbers(page.line_with("lengths of the inputs")), [min(inputs), max(inputs)], 1)
    assert_printed(
        numbers(page.line_with("lengths after LayerNorm")), [min(outputs), max(outputs), 512, math.sqrt(512)], 4
    )
    # the dropdown: "between <shortest> and <longest>"; "about sqrt(512), to four decimals"
    assert glue["input_shortest"] == pytest.approx(min(inputs), rel=1e-12)
    assert glue["input_longest"] == pytest.approx(max(inputs), rel=1e-12)
    assert glue["sqrt_512"] == math.sqrt(512)
    assert round(min(outputs), 4) == round(max(outputs), 4) == round(math.sqrt(512), 4)


def head0_largest(rows, w: lib.BlockWeights) -> list[float]:
    cols = range(D_MODEL // HEADS)  # head 0 uses the first d_k columns of W_Q, W_K, W_V
    q, k, v = (matmul(rows, [[r[c] for c in cols] for r in m.tolist()]) for m in (w.w_q, w.w_k, w.w_v))
    return [max(row) for row in naive_attention(q, k, v)[1]]


def test_largest_weights_with_and_without_layer_norm(page, x, weights, glue):
    rows, ten = x.tolist(), (10 * x).tolist()
    cases = {
        "X": head0_largest(rows, weights),
        "10 X": head0_largest(ten, weights),
        "LayerNorm(X)": head0_largest([layer_norm_row(r) for r in rows], weights),
        "LayerNorm(10 X)": head0_largest([layer_norm_row(r) for r in ten], weights),
    }
    lines = [ln for ln in page.output_with("largest weight per query").splitlines() if "[" in ln]
    printed = {}
    for line in lines:
        label = line.split("[", 1)[0].strip()
        printed[label] = numbers(line[line.index("[") :])
    assert set(printed) == set(cases)
    for label, expected in cases.items():
        assert_printed(printed[label], expected, 4)
    # "<saturated> of the <n> queries put more than 0.98 of their weight on one key"
    assert glue["saturated_rows"] == sum(m > 0.98 for m in cases["10 X"]) >= 3 and glue["sentence_rows"] == 6
    # "The two queries "the" split theirs between the two keys "the", which are the same vector"
    assert x[0].tolist() == x[4].tolist()
    assert abs(cases["10 X"][0] - 0.495) < 0.005 and abs(cases["10 X"][4] - 0.495) < 0.005
    # "After a LayerNorm, X and 10 X give the same weights" (to the printed digits)
    assert cases["LayerNorm(X)"] == pytest.approx(cases["LayerNorm(10 X)"], abs=5e-5)


def test_feed_forward_shapes_zeros_and_position_wise(page, x, weights):
    hidden = [
        [max(0.0, sum(r[t] * weights.w_1[t, j] for t in range(D_MODEL)) + weights.b_1[j]) for j in range(D_FF)]
        for r in x.tolist()
    ]
    zeros = sum(v == 0 for row in hidden for v in row)
    assert page.line_with("-> hidden:").strip() == "X: (6, 8) -> hidden: (6, 32) -> output: (6, 8)"
    assert_printed(numbers(page.line_with("set to 0 by the ReLU")), [0, zeros, 6 * D_FF], 0)
    # quiz 10's feedback: "about half of the ReLU inputs are positive, as the chapter's count shows"
    assert 0.35 <= zeros / (6 * D_FF) <= 0.65
    assert page.line_with("'sat' alone").strip().endswith("True")


def test_parameter_count_and_feed_forward_share(page):
    # counted from the shapes the paper gives: four (512, 512) attention matrices, W_1 (512, 2048),
    # b_1 (2048,), W_2 (2048, 512), b_2 (512,), two LayerNorms with a gain and a bias of 512 each
    shapes_att = [(512, 512)] * 4
    shapes_ff = [(512, 2048), (2048,), (2048, 512), (512,)]
    shapes_ln = [(512,)] * 4
    att, ff, ln = (sum(math.prod(s) for s in group) for group in (shapes_att, shapes_ff, shapes_ln))
    printed = numbers(page.line_with("attention 1,").replace(",", ""))
    assert printed == [att, ff, ln, att + ff + ln]
    share = ff / (att + ff + ln)
    assert_printed(numbers(page.line_with("share of the feed-forward layer")), [100 * share], 1)
    # the summary's "about two thirds"
    assert abs(share - 2 / 3) < 0.01


def test_block_output_row(page, x, weights):
    expected = naive_block(x.tolist(), lists(weights), HEADS)
    assert_printed(numbers(page.line_with("output row of 'sat'")), expected[2], 4)
    assert page.line_with("equals the two lines by hand").strip().endswith("True")
    assert "input: (6, 8)" in page.line_with("after attention and the first addition: (6, 8)")


def test_which_rows_change(page, x, weights):
    other = x.copy()
    other[5] = np.random.default_rng(1).normal(size=D_MODEL)
    for causal, marker in ((True, "(causal)"), (False, "(no mask)")):
        a = naive_block(x.tolist(), lists(weights), HEADS, causal=causal)
        b = naive_block(other.tolist(), lists(weights), HEADS, causal=causal)
        changed = [i for i in range(6) if any(abs(p - q) > 1e-12 for p, q in zip(a[i], b[i]))]
        assert [int(v) for v in numbers(page.line_with(marker))] == changed
    assert numbers(page.line_with("(causal)")) == [5]


def test_pre_and_post_ln_row_lengths(page, x, weights):
    for norm in ("pre", "post"):
        out = naive_block(x.tolist(), lists(weights), HEADS, norm=norm)
        printed = numbers(page.line_with(f"{norm}-LN: output row lengths").split("lengths", 1)[1])
        assert_printed(printed, [length(r) for r in out], 4)
    post = naive_block(x.tolist(), lists(weights), HEADS, norm="post")
    assert all(abs(length(r) - math.sqrt(8)) < 1e-4 for r in post)


def test_stack_of_six_blocks(page, x, glue):
    stack = [lists(lib.random_block_weights(D_MODEL, D_FF, seed=100 + layer)) for layer in range(6)]
    pre, post = x.tolist(), x.tolist()
    rows = [[mean_length(pre), mean_length([layer_norm_row(r) for r in pre]), mean_length(post)]]
    for w in stack:
        pre = naive_block(pre, w, HEADS, norm="pre")
        post = naive_block(post, w, HEADS, norm="post")
        rows.append([mean_length(pre), mean_length([layer_norm_row(r) for r in pre]), mean_length(post)])
    table = page.output_with("after block").splitlines()
    body = [line for line in table if line.strip() and not line.startswith("after block")]
    assert len(body) == 7
    assert_printed(numbers(body[0]), rows[0], 4)
    for layer, line in enumerate(body[1:], start=1):
        assert_printed(numbers(line), [layer, *rows[layer]], 4)
    pre_lengths = [r[0] for r in rows]
    # "grows, from <start> to <end>, with 1 dip on the way (after block <b>)", in the prose and the alt text
    dips = [b for b in range(1, 7) if pre_lengths[b] < pre_lengths[b - 1]]
    assert glue["stream_start"] == pytest.approx(pre_lengths[0], rel=1e-9)
    assert glue["stream_end"] == pytest.approx(pre_lengths[-1], rel=1e-9) and pre_lengths[-1] > 2 * pre_lengths[0]
    assert (glue["stream_dips"], glue["stream_dip_block"]) == (len(dips), dips[0]) and len(dips) == 1
    # what attention reads, and the post-LN stream from block 1 on, stay at sqrt(8)
    assert all(abs(r[1] - math.sqrt(8)) < 1e-4 for r in rows)
    assert all(abs(r[2] - math.sqrt(8)) < 1e-4 for r in rows[1:])


def test_figure_shapes_match_the_computation(x, weights):
    """Every arrow label of the block diagram is the shape of what flows there, at n = 6."""
    sizes = {"(n, d_model)": (6, D_MODEL), "(n, d_ff)": (6, D_FF)}
    w = lists(weights)

    def attend(r):
        out, _ = naive_attention(matmul(r, w["w_q"]), matmul(r, w["w_k"]), matmul(r, w["w_v"]))
        return matmul(out, w["w_o"])

    def linear(r, text):
        if "W₁" in text:
            return [[v + b for v, b in zip(row, w["b_1"])] for row in matmul(r, w["w_1"])]
        return [[v + b for v, b in zip(row, w["b_2"])] for row in matmul(r, w["w_2"])]

    step = {
        "io": lambda r, _: r,
        "add": lambda r, _: r,
        "norm": lambda r, _: [layer_norm_row(v) for v in r],
        "attn": lambda r, _: attend(r),
        "linear": linear,
        "relu": lambda r, _: [[max(0.0, v) for v in row] for row in r],
    }
    for diagram in (PRE_LN_STEPS, POST_LN_STEPS):
        current = x.tolist()
        for kind, text, label in diagram[:-1]:
            current = step[kind](current, text)
            assert (len(current), len(current[0])) == sizes[label], (text, label)


def test_citations_on_the_page(page):
    for author in ("Vaswani", "Xiong", "Radford", "He", "Ba"):
        assert author in page.prose, f"no citation of {author}"


def test_claims_register_quotes_the_page_and_names_real_tests_or_sources():
    import re
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    rows = yaml.safe_load((root / "appendix" / "claims_ch10.yml").read_text(encoding="utf-8"))
    bib = (root / "references.bib").read_text(encoding="utf-8")
    assert len({r["id"] for r in rows}) == len(rows), "claim ids must be unique"
    for row in rows:
        text = " ".join((root / row["page"]).read_text(encoding="utf-8").split())  # as wrapped anywhere
        assert " ".join(row["claim"].split()) in text, f"{row['id']}: the quote is not on {row['page']}"
        if "test" in row:
            path, name = row["test"].split("::")
            assert re.search(rf"^def {name}\(", (root / path).read_text(encoding="utf-8"), re.M), row["id"]
        else:
            assert re.search(r"@\w+\{" + re.escape(row["source"]) + ",", bib) and row["where"], row["id"]


def test_stretch_explorer_claims(x, weights, glue):
    """ "at c = 20 <n> rows have one weight above 0.98, and the two rows of "the" split
    theirs"; "With the LayerNorm on, the weights stay the same (to the two decimals shown)"."""
    rows = x.tolist()
    stretched = head0_largest([[20 * v for v in r] for r in rows], weights)
    assert glue["saturated_rows_20"] == sum(m > 0.98 for m in stretched) == 4
    assert max(stretched[0], stretched[4]) < 0.51
    base = head0_largest([layer_norm_row(r) for r in rows], weights)
    for c in (1, 2, 5, 10, 20):
        normed = head0_largest([layer_norm_row([c * v for v in r]) for r in rows], weights)
        assert [round(v, 2) for v in normed] == [round(v, 2) for v in base], c
