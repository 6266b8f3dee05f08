"""Chapter 7's numbers and claims, checked against independent sources.

- The table of real models: each row's d_model, heads and context length are
  typed here from the papers themselves (the source named beside each row),
  and d_k = d_model / h is checked against the head width the paper states
  where it states one. The page must compute d_k, not type it.
- The example's numbers: recomputed with the plain-Python attention of
  ``tests/naive.py`` from the same inputs (the chapter's seeded draws).
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from built_book import built_page
from chapter_pages import Page, printed_flag
from naive import naive_attention

from sdpa_course import lib

CHAPTER = "chapters/07_multi_head_preview.html"
SOURCE = "chapters/07_multi_head_preview.md"

# model: (family, d_model, heads, context or None, head width stated by the paper or None, source)
PAPERS = {
    "Transformer base": ("encoder-decoder", 512, 8, None, 64, "Vaswani et al. 2017, Table 3"),
    "Transformer big": ("encoder-decoder", 1024, 16, None, 64, "Vaswani et al. 2017, Table 3"),
    "T5-Base": ("encoder-decoder", 768, 12, 512, 64, "Raffel et al. 2020, section 3.1 (d_kv = 64)"),
    "BERT-Base": ("encoder-only", 768, 12, 512, None, "Devlin et al. 2019, section 3"),
    "BERT-Large": ("encoder-only", 1024, 16, 512, None, "Devlin et al. 2019, section 3"),
    "GPT-3 175B": ("decoder-only", 12288, 96, 2048, 128, "Brown et al. 2020, Table 2.1 (d_head = 128)"),
    "LLaMA 7B": ("decoder-only", 4096, 32, 2048, None, "Touvron et al. 2023, Table 2; Llama 2 paper, Table 1"),
}


@pytest.fixture(scope="module")
def page() -> str:
    return html.unescape(built_page(CHAPTER))


def outputs() -> str:
    """What the chapter's cells printed, one output after another."""
    return "\n".join(Page(CHAPTER).outputs)


def test_model_table_matches_the_papers(page):
    for name, (family, width, heads, context, stated, source) in PAPERS.items():
        m = re.search(re.escape(name) + r"\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)", page)
        assert m, f"row {name} missing from the printed table"
        assert m[1] == family, (name, source)
        assert (int(m[2]), int(m[3])) == (width, heads), (name, source)
        assert int(m[4]) == width / heads, f"{name}: d_k should be {width}/{heads}"
        if stated is not None:
            assert width / heads == stated, f"{name}: the paper states a head width of {stated}"
        assert m[5] == ("-" if context is None else str(context)), (name, source)


def test_d_k_is_computed_not_typed():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / SOURCE).read_text(encoding="utf-8")
    cell = text[text.index("MODELS = [") : text.index("]", text.index("MODELS = ["))]
    assert "width // heads_" in text and "128" not in cell and ", 64," not in cell


def test_every_row_is_cited(page):
    for author in ("Vaswani", "Raffel", "Devlin", "Brown", "Touvron"):
        assert author in page, f"no citation of {author} on the page"


@pytest.fixture(scope="module")
def chapter_inputs() -> dict:
    """The chapter's inputs, drawn in the chapter's order from default_rng(7)."""
    _, x = lib.example_sentence(d_model=12)
    rng = np.random.default_rng(7)
    w_q, w_k, w_v = (rng.normal(scale=0.4, size=(12, 12)) for _ in range(3))
    w_o = rng.normal(scale=0.4, size=(12, 12))
    keep = rng.random((6, 6)) >= 0.1
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o, "keep": keep}


def head_weights(inp: dict, head: int) -> list[list[float]]:
    cols = slice(4 * head, 4 * head + 4)
    x = inp["x"]
    return naive_attention(
        (x @ inp["w_q"][:, cols]).tolist(),
        (x @ inp["w_k"][:, cols]).tolist(),
        (x @ inp["w_v"][:, cols]).tolist(),
        scale=1 / 2,
    )[1]


def test_each_head_uses_the_scale_of_its_own_width(chapter_inputs):
    inp = chapter_inputs
    out = lib.multi_head_attention(inp["x"], inp["w_q"], inp["w_k"], inp["w_v"], inp["w_o"], n_heads=3)
    heads = []
    for head in range(3):
        cols = slice(4 * head, 4 * head + 4)
        x = inp["x"]
        heads.append(
            naive_attention(
                (x @ inp["w_q"][:, cols]).tolist(),
                (x @ inp["w_k"][:, cols]).tolist(),
                (x @ inp["w_v"][:, cols]).tolist(),
                scale=1 / 2,
            )[0]
        )
    np.testing.assert_allclose(out, np.concatenate(heads, axis=1) @ inp["w_o"], atol=1e-12)
    assert printed_flag(outputs(), "same as an explicit scale") is True


def test_alt_text_of_the_head_figure(chapter_inputs):
    # "the query the puts its largest weight on sat in heads 0 and 1, but splits it
    # between the two occurrences of the in head 2"
    tokens = lib.SENTENCE
    for head in (0, 1):
        row = head_weights(chapter_inputs, head)[0]
        assert tokens[int(np.argmax(row))] == "sat", (head, row)
    row = head_weights(chapter_inputs, 2)[0]
    top_two = sorted(range(6), key=lambda j: -row[j])[:2]
    assert sorted(tokens[j] for j in top_two) == ["the", "the"], row


def test_dropout_numbers(chapter_inputs, page):
    keep = chapter_inputs["keep"]
    row = head_weights(chapter_inputs, 0)
    sums = [sum(w / 0.9 for w, kept in zip(r, k) if kept) for r, k in zip(row, keep)]
    m = re.search(r"weights set to 0: (\d+) of 36", page)
    assert m and int(m[1]) == int((~keep).sum())
    m = re.search(r"row sums after dropout: \[([^\]]*)\]", page)
    assert m and [float(v) for v in m[1].split()] == pytest.approx(sums, abs=6e-4)
    # a row without a dropped weight sums to 1 / (1 - p)
    assert any(k.all() for k in keep) and round(1 / 0.9, 3) == 1.111


def test_cross_attention_shapes_printed(page):
    assert "weights: (3, 3, 6)" in page
    assert printed_flag(outputs(), "any weight exactly 0") is False  # nothing masked across the two sequences


def test_three_heads_of_width_4_have_as_many_projection_entries_as_one_of_width_12():
    assert 3 * (12 * 4) == 12 * 12


def test_causal_heads_give_the_future_exactly_zero(chapter_inputs):
    x = chapter_inputs["x"]
    for head in range(3):
        cols = slice(4 * head, 4 * head + 4)
        _, w = naive_attention(
            (x @ chapter_inputs["w_q"][:, cols]).tolist(),
            (x @ chapter_inputs["w_k"][:, cols]).tolist(),
            (x @ chapter_inputs["w_v"][:, cols]).tolist(),
            allowed=[[j <= i for j in range(6)] for i in range(6)],
            scale=1 / 2,
        )
        assert all(w[i][j] == 0.0 for i in range(6) for j in range(i + 1, 6))
    assert printed_flag(outputs(), "every head gives the future") is True


# model: (d_model, heads, head width stated by the paper, source)
WIDER = {
    "GPT-3 XL": (2048, 24, 128, "Brown et al. 2020, Table 2.1"),
    "T5-3B": (1024, 32, 128, "Raffel et al. 2020, section 3.7"),
    "T5-11B": (1024, 128, 128, "Raffel et al. 2020, section 3.7"),
}


def test_wider_heads_table_matches_the_papers(page):
    # "d_k = d_model / h is a convention, not a rule": these heads are wider.
    for name, (width, heads, head_width, source) in WIDER.items():
        m = re.search(re.escape(name) + r"\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)", page)
        assert m, f"row {name} missing from the wider-heads table"
        assert (int(m[1]), int(m[2]), int(m[3])) == (width, heads, head_width), (name, source)
        assert float(m[4]) == round(width / heads, 2) and int(m[5]) == heads * head_width
        assert head_width > width / heads
    assert round(2048 / 24, 1) == 85.3  # "not 2048 / 24 ~ 85.3"
    # "four and sixteen times as wide as a token vector"
    assert (32 * 128 / 1024, 128 * 128 / 1024) == (4, 16)


def test_folding_the_scale_into_w_q_gives_the_same_attention():
    # T5 draws W_Q with a standard deviation sqrt(d_k) times smaller and does not
    # scale: its scores equal the scaled scores of an ordinary head.
    rng = np.random.default_rng(11)
    x = rng.normal(size=(5, 16))
    d_k = 8
    w_q, w_k, w_v = (rng.normal(size=(16, d_k)) for _ in range(3))
    scaled = naive_attention((x @ w_q).tolist(), (x @ w_k).tolist(), (x @ w_v).tolist())
    folded = naive_attention((x @ (w_q / np.sqrt(d_k))).tolist(), (x @ w_k).tolist(), (x @ w_v).tolist(), scale=1.0)
    np.testing.assert_allclose(folded[1], scaled[1], rtol=0, atol=1e-12)
    # and the spread: the unscaled score of a W_Q drawn with std 1/sqrt(d_model d_k)
    # and a W_K drawn with std 1/sqrt(d_model), on unit-variance inputs, has
    # variance about 1/d_k * d_k = 1, as a 1/sqrt(d_k) would give with std 1/sqrt(d_model).
    d_model, trials = 256, 4000
    xs = rng.normal(size=(trials, d_model))
    q = xs @ rng.normal(scale=(d_model * d_k) ** -0.5, size=(d_model, d_k))
    k = rng.normal(size=(trials, d_model)) @ rng.normal(scale=d_model**-0.5, size=(d_model, d_k))
    assert np.var(np.sum(q * k, axis=1)) == pytest.approx(1.0, rel=0.2)
