"""Chapter 12's numbers and claims, recomputed without lib's attention.

The inputs are the chapter's inputs (``lib.example_sentence`` and the chapter's
seeded random draws: inputs only, no results). Attention, rotary embeddings,
grouped heads and the sliding window are recomputed with the plain Python of
``tests/naive.py`` and ``tests/naive_decoding.py``, and compared with the numbers
the built page shows: those it prints, and those its text takes from the cells
through myst-nb's glue. One test per claim.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from built_book import built_page
from chapter_pages import Page, assert_printed, numbers
from naive import matmul, naive_attention
from naive_decoding import decoder_heads, grouped, rotate_row, sinusoid

from sdpa_course import lib

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "chapters/12_attention_as_models_run_it"
D_MODEL, H, D_K, H_KV, WINDOW = 16, 4, 4, 2, 3
GLUE_ROLE = re.compile(r"\{glue:text\}`([^`:]+)(?::[^`]*)?`")
PASTED = re.compile(r'<span class="pasted-text">([^<]*)</span>')


@pytest.fixture(scope="module")
def page() -> Page:
    return Page(f"{CHAPTER}.html")


@pytest.fixture(scope="module")
def glued() -> dict[str, str]:
    """Each glued name of the chapter's text, with the text the built page shows for it."""
    names = GLUE_ROLE.findall((ROOT / f"{CHAPTER}.md").read_text(encoding="utf-8"))
    shown = PASTED.findall(built_page(f"{CHAPTER}.html"))
    assert len(names) == len(shown), f"{len(names)} glue roles in the source, {len(shown)} pasted values on the page"
    found: dict[str, str] = {}
    for name, text in zip(names, shown):
        assert found.setdefault(name, text) == text, f"{name} is shown as {found[name]!r} and as {text!r}"
    return found


@pytest.fixture(scope="module")
def inputs() -> dict:
    """The chapter's inputs, drawn in the chapter's order."""
    tokens, x = lib.example_sentence(d_model=D_MODEL)
    rng = np.random.default_rng(12)
    w_q, w_k, w_v = (rng.normal(scale=D_MODEL**-0.5, size=(D_MODEL, H * D_K)) for _ in range(3))
    w_k2, w_v2 = (rng.normal(scale=D_MODEL**-0.5, size=(D_MODEL, H_KV * D_K)) for _ in range(2))
    w_o = rng.normal(scale=(H * D_K) ** -0.5, size=(H * D_K, D_MODEL))
    x_long = rng.normal(size=(16, D_MODEL))
    plain = {name: a.tolist() for name, a in dict(x=x, w_q=w_q, w_k=w_k, w_v=w_v, w_k2=w_k2, w_v2=w_v2).items()}
    return dict(tokens=tokens, arrays=dict(x=x, w_q=w_q, w_k=w_k, w_v=w_v), plain=plain, w_o=w_o, x_long=x_long)


def heads_of(rows, width, count):
    return [[r[g * width : (g + 1) * width] for r in rows] for g in range(count)]


def max_difference(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def full_causal(p):
    """Full causal attention of the chapter's four heads, in plain Python."""
    return decoder_heads(p["x"], p["w_q"], p["w_k"], p["w_v"], H, H)


def test_cached_decoding_equals_full_causal_attention_up_to_rounding(page, glued, inputs):
    a = inputs["arrays"]
    cache, steps = lib.KVCache(), []
    for i in range(len(a["x"])):  # the chapter's loop, with lib
        q, k, v = (lib.split_heads(m, H) for m in lib.project_qkv(a["x"][i : i + 1], a["w_q"], a["w_k"], a["w_v"]))
        cache.append(k, v)
        steps.append(lib.scaled_dot_product_attention(q, cache.keys, cache.values))
    reference = full_causal(inputs["plain"])
    scale = np.abs(reference).max()
    assert max_difference(np.concatenate(steps, axis=-2), reference) < 1e-13 * scale
    eps = np.finfo(np.float64).eps
    assert float(glued["decode_diff"]) < 1e-13 * scale and float(glued["decode_units"]) < 64
    assert numbers(page.line_with("x eps x the largest output"))[0] == float(glued["decode_diff"])
    assert float(glued["decode_units"]) == pytest.approx(float(glued["decode_diff"]) / (eps * scale), abs=0.06)


def test_attending_before_appending_moves_the_outputs_in_their_first_digits(glued, inputs):
    p = inputs["plain"]
    q, k, v = heads_of(matmul(p["x"], p["w_q"]), D_K, H), heads_of(matmul(p["x"], p["w_k"]), D_K, H), None
    v = heads_of(matmul(p["x"], p["w_v"]), D_K, H)
    late = []
    for head in range(H):
        rows = [[0.0] * D_K]  # the first query has nothing to read
        for i in range(1, len(p["x"])):
            out, _ = naive_attention([q[head][i]], k[head][:i], v[head][:i])
            rows.append(out[0])
        late.append(rows)
    difference = max_difference(late, full_causal(p))
    assert difference > 0.1
    assert_printed([float(glued["append_late_diff"])], [difference], 2)


def test_cache_memory_of_llama_7b_and_gpt3_175b(page, glued):
    def per_token(layers, heads, width):
        return 2 * layers * heads * (width // heads) * 2  # 2 bytes a number

    llama, gpt3 = per_token(32, 32, 4096), per_token(96, 96, 12288)
    assert glued["llama_kib"] == f"{llama / 1024:.0f}" == "512"
    assert glued["llama_gib"] == f"{llama * 2048 / 2**30:.0f}"
    assert glued["gpt3_mib"] == f"{gpt3 / 2**20:.1f}" and glued["gpt3_gib"] == f"{gpt3 * 2048 / 2**30:.0f}"
    assert glued["sequences_like_weights"] == f"{6.7e9 * 2 / (llama * 2048):.0f}"
    llama_line = page.line_with("LLaMA 7B  ").split("7B", 1)[1]
    gpt3_line = page.line_with("GPT-3 175B  ").split("175B", 1)[1]
    assert_printed(numbers(llama_line), [llama / 1024, llama * 2048 / 2**30, 2048], 1)
    assert_printed(numbers(gpt3_line), [gpt3 / 2**20, gpt3 * 2048 / 2**30, 2048], 1)


def test_heads_of_one_group_share_keys_but_not_weights(page, glued, inputs):
    p = inputs["plain"]
    q = heads_of(matmul(p["x"], p["w_q"]), D_K, H)
    k, v = heads_of(matmul(p["x"], p["w_k2"]), D_K, H_KV), heads_of(matmul(p["x"], p["w_v2"]), D_K, H_KV)
    _, weights = grouped(q, k, v, lib.causal_mask(len(p["x"])).tolist())
    assert_printed([float(glued["same_group_diff"])], [max_difference(weights[0], weights[1])], 2)
    assert max_difference(weights[0], weights[1]) > 0.1
    for marker in ("keys and values copied for each head:", "h_kv = h is multi-head", "h_kv = 1 is multi-query"):
        assert page.line_with(marker).strip().endswith("True")


def test_sharing_key_value_heads_shrinks_the_cache_by_h_over_h_kv(page, glued):
    mha, gqa, mqa = (2 * 32 * h_kv * 128 * 2 for h_kv in (32, 8, 1))
    assert glued["mistral_kib"] == f"{gqa / 1024:.0f}" and glued["mqa_kib"] == f"{mqa / 1024:.0f}"
    assert glued["gqa_factor"] == f"{mha / gqa:.0f}" == str(32 // 8)
    assert_printed(numbers(page.line_with("grouped-query (Mistral 7B")), [7, 8, gqa / 1024], 0)


def spread_along_offsets(scores) -> float:
    n = len(scores)
    return max(
        max(scores[i][i - o] for i in range(n) if 0 <= i - o < n)
        - min(scores[i][i - o] for i in range(n) if 0 <= i - o < n)
        for o in range(-(n - 2), n - 1)
    )


def test_rotary_scores_depend_on_the_offset_alone_and_added_sinusoids_do_not(glued, inputs):
    p = inputs["plain"]
    q_cat = matmul([p["x"][1]], [r[:D_K] for r in p["w_q"]])[0]
    k_sat = matmul([p["x"][2]], [r[:D_K] for r in p["w_k"]])[0]
    turned_q, turned_k = ([rotate_row(row, i) for i in range(16)] for row in (q_cat, k_sat))
    rope = [[sum(a * b for a, b in zip(qi, kj)) / math.sqrt(D_K) for kj in turned_k] for qi in turned_q]
    pos = sinusoid(16, D_MODEL)
    sin_q = matmul([[a + b for a, b in zip(p["x"][1], row)] for row in pos], [r[:D_K] for r in p["w_q"]])
    sin_k = matmul([[a + b for a, b in zip(p["x"][2], row)] for row in pos], [r[:D_K] for r in p["w_k"]])
    added = [[sum(a * b for a, b in zip(qi, kj)) / math.sqrt(D_K) for kj in sin_k] for qi in sin_q]
    alone = [[sum(a * b for a, b in zip(pi, pj)) for pj in pos] for pi in pos]
    assert spread_along_offsets(rope) < 1e-13 and float(glued["rope_spread"]) < 1e-13
    assert spread_along_offsets(alone) < 1e-13 and float(glued["positions_alone_spread"]) < 1e-13
    assert spread_along_offsets(added) > 0.5
    assert_printed([float(glued["sinusoid_spread"])], [spread_along_offsets(added)], 2)


def test_keys_turned_at_their_own_position_decode_right_and_turned_late_lose_the_positions(glued, inputs):
    p = inputs["plain"]
    with_rope = decoder_heads(p["x"], p["w_q"], p["w_k"], p["w_v"], H, H, rotary=True)
    without = full_causal(p)
    assert float(glued["rope_decode_diff"]) < 1e-13 and float(glued["late_vs_none"]) < 1e-13
    assert_printed([float(glued["late_vs_rope"])], [max_difference(with_rope, without)], 2)


def test_a_stack_of_windows_reaches_layers_times_window_minus_one(glued, inputs):
    a = inputs["arrays"]
    w_q, w_k, w_v, w_o = (m.tolist() for m in (a["w_q"], a["w_k"], a["w_v"], inputs["w_o"]))

    def stack(rows, layers):
        for _ in range(layers):
            heads = decoder_heads(rows, w_q, w_k, w_v, H, H, window=WINDOW)
            concat = [sum((heads[h][i] for h in range(H)), []) for i in range(len(rows))]
            rows = [[a + b for a, b in zip(r, s)] for r, s in zip(rows, matmul(concat, w_o))]
        return rows

    x_long = inputs["x_long"].tolist()
    changed = [list(r) for r in x_long]
    changed[0] = [v + 1.0 for v in changed[0]]
    for layers in (1, 2, 3):
        moved = [i for i, (r, s) in enumerate(zip(stack(changed, layers), stack(x_long, layers))) if r != s]
        assert moved == list(range(layers * (WINDOW - 1) + 1))
        assert glued[f"reach_{layers}"] == str(layers * (WINDOW - 1))
    assert glued["mistral_span"] == f"{32 * (4096 - 1):,d}"
    assert glued["mistral_window_mib"] == f"{4096 * 2 * 32 * 8 * 128 * 2 / 2**20:.0f}"


def test_all_four_together_decode_as_the_full_computation(page, inputs):
    p = inputs["plain"]
    reference = decoder_heads(p["x"], p["w_q"], p["w_k2"], p["w_v2"], H, H_KV, rotary=True, window=WINDOW)
    assert numbers(page.line_with("heads: (4, 6, 4)"))[-1] < 1e-13 * np.abs(reference).max()
    a = inputs["arrays"]
    got = lib.decode_with_cache(
        a["x"],
        a["w_q"],
        np.array(p["w_k2"]),
        np.array(p["w_v2"]),
        n_heads=H,
        n_kv_heads=H_KV,
        rotary=True,
        window=WINDOW,
    )
    assert max_difference(got, reference) < 1e-13 * np.abs(reference).max()
