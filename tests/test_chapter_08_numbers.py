"""Chapter 8's built page: the worked example and the benchmark figures it quotes.

The running maximum and sum of the worked example are recomputed here with
Python floats and math.exp, from the example's inputs (the sentence's token
vectors and the projection matrices), not with lib's attention or softmax.
The benchmark ratios the page quotes must be those of the committed results
file, which the chapter reads instead of re-running the benchmark.

Run ``./course build`` (or ``./course test``, which builds first) before this test.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import pytest
from built_book import built_page

import lib
import lib.tiles

PAGE = "chapters/08_online_softmax.html"
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "attention_speed_memory.json"
QUERY, BLOCK = 3, 2  # the chapter's query "on", blocks of two keys

STEP = re.compile(
    r"block of keys (\d+)\.\.(\d+) \([^)]*\): block max ([-+0-9.]+), rescale ([0-9.]+)\s+->\s+"
    r"running max m = ([-+0-9.]+), running sum l = ([0-9.]+)"
)


@pytest.fixture(scope="module")
def page_text() -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", built_page(PAGE)))


def scaled_scores_of_query(i: int) -> list[float]:
    """q_i . k_j / sqrt(d_k) with plain Python, from the example's inputs."""
    _, x = lib.example_sentence()
    w = lib.example_projections()
    rows = x.tolist()

    def project(row, m):
        return [sum(row[a] * m[a][c] for a in range(len(row))) for c in range(len(m[0]))]

    q = project(rows[i], w["w_q"].tolist())
    keys = [project(r, w["w_k"].tolist()) for r in rows]
    return [sum(a * b for a, b in zip(q, k)) / math.sqrt(len(q)) for k in keys]


def test_the_worked_example_prints_the_running_max_and_sum(page_text):
    scores = scaled_scores_of_query(QUERY)
    printed = STEP.findall(page_text)
    assert len(printed) == math.ceil(len(scores) / BLOCK), printed
    m, total = -math.inf, 0.0
    for start, stop, block_max, rescale, run_max, run_sum in printed:
        block = scores[int(start) : int(stop) + 1]
        new = max(m, max(block))
        factor = math.exp(m - new)
        total = total * factor + sum(math.exp(s - new) for s in block)
        m = new
        assert float(block_max) == pytest.approx(max(block), abs=6e-5)
        assert float(rescale) == pytest.approx(factor, abs=6e-5)
        assert float(run_max) == pytest.approx(m, abs=6e-5)
        assert float(run_sum) == pytest.approx(total, abs=6e-5)
    # The second block raises the maximum (the factor is below 1), the third does not.
    assert float(printed[1][3]) < 1 and float(printed[2][3]) == 1


def test_the_page_quotes_the_committed_benchmark_results(page_text):
    data = json.loads(RESULTS.read_text())
    ratios = data["speed"]["ratio_to_matmul_floor"]
    assert f"the reference takes {ratios['reference']:.2f}×" in page_text
    assert f"blocked attention {ratios['blocked']:.2f}×" in page_text
    memory = data["memory"]["summary"]["16384"]["blocked_over_reference_extra_memory"]
    assert f"1/{1 / memory:.0f} (at n = 16384)" in page_text
    assert data["date"] in page_text


def committed() -> dict:
    return json.loads(RESULTS.read_text())


def test_the_score_matrix_against_q_k_v_and_o_is_computed(page_text):
    # n^2 scores against 4 n d numbers: the ratio is n / (4 d), not a constant.
    d = 64
    for n in (1024, 4096, 16384):
        ratio = n * n / (4 * n * d)
        assert re.search(
            rf"\b{n}\s+{4 * n * d * 4 / 2**20:.0f} MiB\s+{n * n * 4 / 2**20:.0f} MiB\s+{ratio:.0f}x", page_text
        ), n
    assert (
        f"At n = 16384 the score matrix is {16384 / (4 * d):.0f} times the size of Q, K, V and O together" in page_text
    )
    assert "256 times larger" not in page_text
    # The dropdown's figures.
    source = built_page_source()
    assert f"{1024 // (4 * d)} at $n = 1024$, {16384 // (4 * d)} at $n = 16384$" in source
    assert f"$n / d = {16384 // d}$ times the size of $Q$ alone at $n = 16384$" in source
    # The introduction: 16384^2 numbers, 4 bytes each.
    assert f"$n^2 \\approx {16384**2 / 1e6:.0f}$ million" in source
    assert 16384**2 * 4 == 2**30 and "that is 1 GiB" in source


def test_the_causal_tile_counts(page_text):
    n, size = 16, 4
    blocks = n // size
    computed = sum(1 for r in range(blocks) for c in range(blocks) if c * size <= r * size + size - 1)
    assert f"tiles computed: {computed} of {blocks * blocks}, skipped: {blocks * blocks - computed}" in page_text
    diagonal = sum(1 for i in range(size) for j in range(size) if j <= i) / size**2
    assert f"permitted share of a diagonal tile: {diagonal:.4f}" in page_text
    assert f"{sum(range(1, size + 1))} of its {size * size} scores are permitted, {diagonal:.3f}" in built_page_source()
    for b in (4, 16, 64, 256):
        assert re.search(rf"\b{b} x {b} tiles: share skipped {b * (b - 1) / 2 / b**2:.3f}", page_text), b
    # "approaches one half"
    assert abs(10**6 * (10**6 - 1) / 2 / 10**12 - 0.5) < 1e-5


def test_the_worked_example_s_quoted_maxima():
    scores = scaled_scores_of_query(QUERY)
    first, second = max(scores[:2]), max(scores[:4])
    tokens, _ = lib.example_sentence()
    first_key, second_key = tokens[scores.index(first)], tokens[scores.index(second)]
    assert f'from ${first:.2f}$ (key "{first_key}") to ${second:.2f}$ (key "{second_key}")' in built_page_source()
    top = max(scores)
    normaliser = sum(math.exp(s - top) for s in scores)
    alt = re.search(r'alt="(Two step plots[^"]*)"', built_page(PAGE))
    assert alt, "the running-state figure has no alt text"
    text = html.unescape(alt.group(1))
    assert f"about {first:.2f}".replace("-", "−") in text and f"about {second:.2f}" in text
    assert f"about {normaliser:.2f}" in text


def built_page_source() -> str:
    """The chapter's MyST source, whitespace collapsed: its prose, with the math as written."""
    text = (Path(__file__).resolve().parents[1] / "chapters" / "08_online_softmax.md").read_text(encoding="utf-8")
    return re.sub(r"\s+", " ", text)


def test_rounding_differences_and_machine_epsilon(page_text):
    source = built_page_source()
    for bits, eps in ((52, 2.0**-52), (23, 2.0**-23)):
        mantissa, exponent = f"{eps:.1e}".split("e")
        assert f"$2^{{-{bits}}} \\approx {mantissa} \\times 10^{{{int(exponent)}}}$" in source, bits
    found = re.findall(
        r"(float64|float32), causal=\w+\s*, block_size=\s*\d+: largest difference ([0-9.e+-]+)", page_text
    )
    assert len(found) == 12
    for dtype, diff in found:
        # A few units in the last digit of values of size ~1.
        assert float(diff) <= (1e-14 if dtype == "float64" else 1e-5), (dtype, diff)


def test_the_page_quotes_the_pass_by_pass_times_and_the_tile_curve(page_text):
    data = committed()
    passes = data["passes"]
    whole, tiled, products = (passes["seconds"][key] for key in ("whole", "tiled", "products"))
    assert list(whole) == ["scale", "max", "subtract", "exp", "sum", "divide"]
    total_whole, total_tiled = sum(whole.values()), sum(tiled.values())
    assert f"The six passes over the whole matrix took {total_whole * 1e3:.1f} ms, " in page_text
    assert f"{total_whole / sum(products.values()):.2f} times the two products together" in page_text
    exp_over_sub = whole["exp"] / whole["subtract"]
    assert f"The exponential took {exp_over_sub:.2f} times as long as the subtraction" in page_text
    took = f"The exponential took {exp_over_sub:.2f} times as long as the subtraction"
    if exp_over_sub <= 1.1:
        took += ": its dozen operations per number cost about as much as (within 10 % of) the single one"
    else:
        took += ": here its extra arithmetic shows."
    assert took in page_text

    assert "part of its time is arithmetic" not in page_text
    tile = passes["tile"]
    assert (
        f"Over one tile of {tile['rows']} × {tile['cols']} scores ({passes['tile_bytes'] / 2**10:.0f} KiB," in page_text
    )
    assert f"the six passes took {total_tiled * 1e3:.1f} ms: {total_whole / total_tiled:.1f} times faster" in page_text
    # The score matrix of 16 x 1024 x 1024 float32 is the 64 MiB the text names.
    assert passes["score_matrix_bytes"] == 16 * 1024 * 1024 * 4 == 64 * 2**20
    for name in whole:
        moved = passes["score_matrix_bytes"] * (1 if name in ("max", "sum") else 2)
        assert re.search(
            rf"\| {name} \| {whole[name] * 1e3:.1f} \| {moved / whole[name] / 1e9:.1f} \| "
            rf"{tiled[name] * 1e3:.1f} \| {whole[name] / tiled[name]:.1f} \|",
            built_markdown_tables(page_text),
        ), name
    points = data["tile_curve"]["points"]
    chosen = next(p for p in points if p["side"] == "chosen")
    sides = [p for p in points if p["side"] != "chosen"]

    def ratio(point, path):
        return point[path]["seconds"] / data["tile_curve"]["matmul_floor_seconds"]

    best = {path: min(sides, key=lambda p: ratio(p, path)) for path in ("shift_free", "shifted")}
    assert (
        f"The fastest tile side measured was {best['shift_free']['side']} "
        f"({ratio(best['shift_free'], 'shift_free'):.2f}× the floor) on the shift-free path and "
        f"{best['shifted']['side']} ({ratio(best['shifted'], 'shifted'):.2f}×) on the shifted path"
    ) in page_text
    assert (
        f"the tile chosen from the cache, {chosen['tile']['rows']} × {chosen['tile']['cols']}, "
        f"took {ratio(chosen, 'shift_free'):.2f}× the floor (shifted: {ratio(chosen, 'shifted'):.2f}×)"
    ) in page_text
    whole_tile = sides[-1]
    assert whole_tile["tile"]["rows"] == whole_tile["tile"]["cols"] == data["tile_curve"]["shape"][1]
    at_chosen = ratio(chosen, "shift_free") / ratio(chosen, "shifted")
    assert f"the shift-free path took {at_chosen:.2f} times as long as the shifted path" in page_text
    per_side = sorted(ratio(p, "shifted") / ratio(p, "shift_free") for p in sides)
    middle = len(per_side) // 2
    passes_gain = per_side[middle] if len(per_side) % 2 else (per_side[middle - 1] + per_side[middle]) / 2
    tile_gain = ratio(whole_tile, "shifted") / ratio(chosen, "shifted")
    kib = {
        p["side"]: f"{p['tile_bytes'] / 2**20:.0f} MiB"
        if p["tile_bytes"] >= 2**20
        else f"{p['tile_bytes'] / 2**10:.0f} KiB"
        for p in points
    }
    assert (
        f"from the whole {whole_tile['side']} × {whole_tile['side']} matrix ({kib[whole_tile['side']]}) "
        f"to the chosen tile ({kib['chosen']}), the time changed by a factor "
        f"{ratio(chosen, 'shift_free') / ratio(whole_tile, 'shift_free'):.2f} on the shift-free path and "
        f"{1 / tile_gain:.2f} on the shifted path"
    ) in page_text
    assert (
        f"one pass per tile instead of four made blocked attention {passes_gain:.2f} times as fast "
        f"(the median over the {len(sides)} tile sides); "
        f"on the shifted path, the chosen tile instead of the whole matrix made blocked attention "
        f"{tile_gain:.2f} times as fast"
    ) in page_text
    # Whole sentences, as rendered: the page also shows the code that writes them.
    verdict = (
        "Making fewer passes bought more than fitting the cache"
        if passes_gain > tile_gain
        else "Fitting the cache bought more than making fewer passes"
    )
    verdict += ", which in this run bought nothing at all." if min(passes_gain, tile_gain) <= 1 else "."
    assert f"{tile_gain:.2f} times as fast. {verdict}" in page_text
    # The tile the speed run used is the one chosen from the recorded L2 size.
    assert data["speed"]["tile"] == chosen["tile"] == tile
    for point in points:  # the curve's tiles are those lib.tiles gives for each side
        side = None if point["side"] == "chosen" else int(point["side"])
        l2 = data["machine"]["caches"].get("L2", lib.tiles.DEFAULT_L2_BYTES)
        want = lib.tiles.choose_tile(1024, 1024, 64, 64, 4, heads=16, budget_bytes=l2 // 2, side=side)
        assert point["tile"] == want._asdict()
    assert data["machine"]["tile_budget_bytes"] == data["machine"]["caches"].get("L2", 2**20) // 2


def built_markdown_tables(page_text: str) -> str:
    """The page's tables as Markdown-like rows: cells joined by ' | '."""
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", built_page(PAGE), flags=re.S)
    lines = []
    for row in rows:
        cells = [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.S)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def test_the_page_names_the_machine_and_its_caches(page_text):
    data = committed()
    machine = data["machine"]
    assert f"processor “{machine['processor']}”" in page_text
    for level, size in machine["caches"].items():
        shown = f"{size / 2**20:.0f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
        assert f"{level} {shown}" in page_text
    if machine["torch"] is None:
        assert "PyTorch was not installed" in page_text


def test_the_speed_table_and_the_causal_ratios(page_text):
    data = committed()
    ratios = data["speed"]["ratio_to_matmul_floor"]
    assert f"(with a causal mask: {ratios['reference_causal']:.2f}× and {ratios['blocked_causal']:.2f}×)" in page_text
    tables = built_markdown_tables(page_text)
    for key, ratio in ratios.items():
        assert f"| {data['speed']['seconds'][key] * 1e3:.1f} | {ratio:.2f} |" in tables, key


def test_the_memory_figure_s_alt_text_and_caption_hold():
    data = committed()
    cases = {(c["impl"], c["n"]): c for c in data["memory"]["cases"]}
    sizes = sorted({n for _, n in cases})
    assert sizes[0] == 1024 and round(cases[("reference", 1024)]["traced_extra_bytes"] / 2**20) == 4
    for n in sizes:
        ref = cases[("reference", n)]["traced_extra_bytes"]
        assert n * n * 4 <= ref <= 1.1 * n * n * 4  # "the size of its score matrix"
    blocked = [cases[("blocked", n)]["traced_extra_bytes"] for n in sizes]
    assert all(b < 2**20 for b in blocked)  # "below 1 MiB"
    assert max(blocked) / min(blocked) < 1.5  # "stays flat" while n grows 16-fold
    alt = html.unescape(built_page(PAGE))
    assert "from 4 MiB at n = 1024" in alt and "stays flat, below 1 MiB" in alt


def test_the_quiz_s_numeric_answers():
    quiz = json.loads((Path(__file__).resolve().parents[1] / "chapters" / "08_online_softmax.quiz.json").read_text())
    right = {
        q["question"][:40]: next(a["value"] for a in q["answers"] if a["correct"])
        for q in quiz
        if q["type"] == "numeric"
    }
    expected = [
        1.5 * math.exp(2 - (2 + math.log(4))) + 1.0,  # running sum after a new maximum
        8192**2 * 4 / 2**20,  # MiB of the score matrix at n = 8192
        sum(range(1, 5)),  # causal tiles computed, 16 x 16 in tiles of 4
        4096 / (4 * 64),  # score matrix against Q, K, V and O at n = 4096
        round(math.sqrt(2**20 / 2 / 4)),  # largest square float32 tile in half of 1 MiB
    ]
    assert sorted(right.values()) == pytest.approx(sorted(expected))
    positions = [
        next(i for i, a in enumerate(q["answers"]) if a["correct"]) for q in quiz if q["type"] == "multiple_choice"
    ]
    assert len(quiz) >= 8 and len(set(positions)) >= 3, positions


def test_the_shift_free_bound_s_limits(page_text):
    # Half the natural log of the largest float: float32's largest is
    # (2 - 2**-23) * 2**127, float64's (2 - 2**-52) * 2**1023.
    for name, mantissa, exponent in (("float32", 23, 127), ("float64", 52, 1023)):
        limit = (math.log(2 - 2.0**-mantissa) + exponent * math.log(2)) / 2
        assert f"{name}: B may be at most {limit:.2f}" in page_text


def test_the_causal_tile_count_and_gain_at_the_benchmark_s_size(page_text):
    """The tiles a causal call computes at n = 1024, derived from lib.tiles and
    counted with plain loops, and the measured gain, from the results file."""
    data = committed()
    l2 = data["machine"]["caches"].get("L2", lib.tiles.DEFAULT_L2_BYTES)
    n = data["speed"]["shape"][1]
    tile = lib.tiles.choose_tile(n, n, 64, 64, 4, heads=16, budget_bytes=l2 // 2)
    assert data["speed"]["tile"] == tile._asdict()
    row_starts, col_starts = range(0, n, tile.rows), range(0, n, tile.cols)
    # A tile is computed when some query in it may see some key in it: its first
    # key comes no later than its last query.
    computed = sum(1 for i0 in row_starts for j0 in col_starts if j0 <= min(i0 + tile.rows, n) - 1)
    total = len(row_starts) * len(col_starts)
    seconds = data["speed"]["seconds"]
    gain = 1 - seconds["blocked_causal"] / seconds["blocked"]
    assert (
        f"the score matrix is {len(row_starts)} × {len(col_starts)} = {total} tiles; causal blocked attention "
        f"computes {computed} of them and skips {total - computed}. Measured, its causal call took "
        f"{100 * gain:.0f} % less time than its unmasked one "
        f"({seconds['blocked_causal'] * 1e3:.1f} against {seconds['blocked'] * 1e3:.1f} ms)"
    ) in page_text
    assert "about half the scores at this size" not in page_text
    # With 342-row tiles (a 2 MiB L2), 6 of 9 tiles are computed.
    wide = lib.tiles.choose_tile(n, n, 64, 64, 4, heads=16, budget_bytes=2**20)
    assert wide.rows == 342
    assert sum(1 for i0 in range(0, n, 342) for j0 in range(0, n, 342) if j0 <= min(i0 + 342, n) - 1) == 6
