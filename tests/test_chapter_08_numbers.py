"""Chapter 8's built page: the worked example and the benchmark figures it quotes.

The running maximum and sum of the worked example are recomputed here with
Python floats and math.exp, from the example's inputs (the sentence's token
vectors and the projection matrices), not with lib's attention or softmax.
The benchmark figures the page quotes must be those of the committed results
file, which the chapter reads instead of re-running the benchmark: every
median and middle half (first to third quartile) is recomputed here from the
raw per-round times the file holds, with Python's ``statistics``, not with
the benchmark's own summary. The numbers in the chapter's sentences and
captions are glued from its code (myst-nb ``glue``); the tests read them by
name (``tests/glued.py``).

Run ``./course build`` (or ``./course test``, which builds first) before this test.
"""

from __future__ import annotations

import html
import json
import math
import re
import statistics
from pathlib import Path

import pytest
from built_book import built_page
from glued import glued

from sdpa_course import lib
from sdpa_course.lib import tiles as tiling

PAGE = "chapters/08_online_softmax.html"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "attention_speed_memory.json"
QUERY, BLOCK = 3, 2  # the chapter's query "on", blocks of two keys
PASSES = ("scale", "max", "subtract", "exp", "sum", "divide")

STEP = re.compile(
    r"block of keys (\d+)\.\.(\d+) \([^)]*\): block max ([-+0-9.]+), rescale ([0-9.]+)\s+->\s+"
    r"running max m = ([-+0-9.]+), running sum l = ([0-9.]+)"
)


@pytest.fixture(scope="module")
def page_text() -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", built_page(PAGE)))


@pytest.fixture(scope="module")
def values() -> dict:
    return glued("chapters/08_online_softmax")


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(RESULTS.read_text())


def quartiles(per_round: list[float]) -> tuple[float, float, float]:
    """Median, first and third quartile (linear interpolation between the sorted values)."""
    q1, median, q3 = statistics.quantiles(per_round, n=4, method="inclusive")
    return median, q1, q3


def ratio(seconds: dict, of: str, over: str) -> tuple[float, float, float]:
    """The median and quartiles of ``of / over``, round by round, from the raw times."""
    return quartiles([a / b for a, b in zip(seconds[of], seconds[over], strict=True)])


def assert_quotes(text: str, expected: tuple[float, ...]) -> None:
    """``text`` quotes the numbers ``expected``, in order, to the two decimals it shows."""
    shown = [float(x) for x in re.findall(r"\d+\.\d+", text)]
    assert shown == pytest.approx(list(expected), abs=0.0051), text


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


def test_the_worked_example_s_quoted_maxima_and_normaliser(values):
    scores = scaled_scores_of_query(QUERY)
    tokens, _ = lib.example_sentence()
    first, second = max(scores[:2]), max(scores[:4])
    assert values["worked_first_max"] == pytest.approx(first, abs=1e-12)
    assert values["worked_second_max"] == pytest.approx(second, abs=1e-12) and second > first
    assert values["worked_first_key"] == tokens[scores.index(first)]
    assert values["worked_second_key"] == tokens[scores.index(second)]
    top = max(scores)
    assert values["worked_normaliser"] == pytest.approx(sum(math.exp(s - top) for s in scores), abs=1e-12)


def test_the_score_matrix_against_q_k_v_and_o_is_computed(page_text, values):
    # n^2 scores against 4 n d numbers: the ratio is n / (4 d), not a constant.
    d = 64
    for n in (1024, 4096, 16384):
        ratio_n = n * n / (4 * n * d)
        assert re.search(
            rf"\b{n}\s+{4 * n * d * 4 / 2**20:.0f} MiB\s+{n * n * 4 / 2**20:.0f} MiB\s+{ratio_n:.0f}x", page_text
        ), n
    assert values["ratio_at_1024"] == 1024 / (4 * d) and values["ratio_at_16384"] == 16384 / (4 * d)
    assert values["ratio_to_q_at_16384"] == 16384 / d
    # The introduction: 16384^2 numbers, 4 bytes each, are 1 GiB.
    assert values["intro_millions"] == 16384**2 / 1e6 and values["intro_gib"] == 16384**2 * 4 / 2**30 == 1


def test_the_causal_tile_counts(page_text, values):
    n, size = 16, 4
    blocks = n // size
    computed = sum(1 for r in range(blocks) for c in range(blocks) if c * size <= r * size + size - 1)
    m = re.search(r"tiles computed: (\d+) of (\d+), skipped: (\d+)", page_text)
    assert m and (int(m[1]), int(m[2]), int(m[3])) == (computed, blocks * blocks, blocks * blocks - computed)
    permitted = sum(1 for i in range(size) for j in range(size) if j <= i)
    assert values["demo_computed"] == computed and values["demo_skipped"] == blocks * blocks - computed
    assert values["demo_diagonal_permitted"] == permitted and values["demo_diagonal_share"] == permitted / size**2
    for b in (4, 16, 64, 256):
        assert re.search(rf"\b{b} x {b} tiles: share skipped {b * (b - 1) / 2 / b**2:.3f}", page_text), b
    # "approaches one half only as b grows: b = 3 skips a third"
    assert 3 * 2 / 2 / 9 == pytest.approx(1 / 3) and abs(10**6 * (10**6 - 1) / 2 / 10**12 - 0.5) < 1e-5


def test_rounding_differences_and_machine_epsilon(page_text):
    source = " ".join((ROOT / "chapters" / "08_online_softmax.md").read_text(encoding="utf-8").split())
    for bits, eps in ((52, 2.0**-52), (23, 2.0**-23)):
        m = re.search(rf"\$2\^{{-{bits}}} \\approx ([0-9.]+) \\times 10\^{{(-\d+)}}\$", source)
        assert m and float(m[1]) * 10 ** int(m[2]) == pytest.approx(eps, rel=0.03), bits
    found = re.findall(
        r"(float64|float32), causal=\w+\s*, block_size=\s*\d+: largest difference ([0-9.e+-]+)", page_text
    )
    assert len(found) == 12
    for dtype, diff in found:
        # A few units in the last digit of values of size ~1.
        assert float(diff) <= (1e-14 if dtype == "float64" else 1e-5), (dtype, diff)


def test_the_page_names_the_machine_and_its_caches(values, data):
    machine = data["machine"]
    assert values["bench_date"] == data["date"] and values["bench_processor"] == machine["processor"]
    assert values["bench_cores"] == machine["logical_cores"] and values["bench_memory_gib"] == machine["memory_gib"]
    for level, size in machine["caches"].items():
        shown = f"{size / 2**20:.0f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
        assert f"{level} {shown}" in values["bench_caches"]
    assert (machine["torch"] is None) == ("PyTorch was not installed" in values["bench_software"])
    assert values["bench_rounds"] == data["speed"]["rounds"] >= 5


def test_each_implementation_against_the_products_it_runs(values, data):
    speed = data["speed"]
    seconds = speed["seconds"]
    # The reference's products are the whole ones, timed in the same round.
    whole = [a + b for a, b in zip(seconds["qk_whole"], seconds["pv_whole"], strict=True)]
    assert seconds["products_whole"] == pytest.approx(whole)
    quoted = {
        "speed_reference": ("reference", "products_whole"),
        "speed_reference_causal": ("reference_causal", "products_whole"),
        "speed_blocked": ("blocked", "products_tiled"),
        "speed_blocked_causal": ("blocked_causal", "products_tiled_causal"),
        "speed_blocked_whole": ("blocked", "products_whole"),
        "speed_blocked_causal_whole": ("blocked_causal", "products_whole"),
        "speed_tiled_products": ("products_tiled", "products_whole"),
        "speed_tiled_products_causal": ("products_tiled_causal", "products_whole"),
        "speed_blocked_over_reference": ("blocked", "reference"),
    }
    for name, (of, over) in quoted.items():
        assert_quotes(values[name], ratio(seconds, of, over))
    median, q1, q3 = ratio(seconds, "products_tiled", "products_whole")
    verdict = values["speed_tiled_products_verdict"]
    assert ("less" in verdict, "more" in verdict) == (q3 < 1, q1 > 1)
    tile = speed["tile"]
    assert values["speed_tile_kib"] == f"{4 * tile['rows'] * tile['cols'] * tile['heads'] // 1024} KiB"
    assert values["bench_shape"] == ", ".join(map(str, speed["shape"])) == "16, 1024, 64"


def test_the_speed_table_quotes_medians_and_ratios(data):
    speed = data["speed"]
    seconds = speed["seconds"]
    rows = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", built_page(PAGE), flags=re.S):
        cells = [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        if cells and cells[0].startswith("lib."):
            rows[(cells[0].split(" ")[0], cells[1])] = cells[2:]
    own = {"lib.scaled_dot_product_attention": "products_whole", "lib.blocked_attention": "products_tiled"}
    assert len(rows) == 4
    for (impl, causal), cells in rows.items():
        key = ("reference" if "scaled" in impl else "blocked") + ("_causal" if causal == "yes" else "")
        products = own[impl] + ("_causal" if causal == "yes" and "blocked" in impl else "")
        assert float(cells[0]) == pytest.approx(1e3 * statistics.median(seconds[key]), abs=0.051)
        assert float(cells[1]) == pytest.approx(1e3 * statistics.median(seconds[products]), abs=0.051)
        assert_quotes(cells[2], ratio(seconds, key, products))
        assert_quotes(cells[3], ratio(seconds, key, "products_whole"))


def whole_over_tiled(passes: dict, name: str) -> tuple[float, float, float]:
    return ratio(passes["seconds"], name, f"{name}_tiled")


def test_the_passes_over_the_whole_matrix_and_over_tiles(values, data):
    passes = data["passes"]
    seconds = passes["seconds"]
    rounds = passes["rounds"]
    total = [sum(seconds[p][r] for p in PASSES) for r in range(rounds)]
    total_tiled = [sum(seconds[f"{p}_tiled"][r] for p in PASSES) for r in range(rounds)]
    assert values["passes_total_ms"] == pytest.approx(1e3 * statistics.median(total), rel=1e-9)
    assert values["passes_tiled_ms"] == pytest.approx(1e3 * statistics.median(total_tiled), rel=1e-9)
    products = [a + b for a, b in zip(seconds["qk_whole"], seconds["pv_whole"], strict=True)]
    assert_quotes(values["passes_over_products"], quartiles([a / b for a, b in zip(total, products, strict=True)]))
    assert_quotes(values["passes_whole_over_tiled"], quartiles([a / b for a, b in zip(total, total_tiled)]))
    assert_quotes(values["passes_exp_over_subtract"], ratio(seconds, "exp", "subtract"))
    assert_quotes(values["passes_exp_over_subtract_tiled"], ratio(seconds, "exp_tiled", "subtract_tiled"))
    assert_quotes(values["passes_exp"], whole_over_tiled(passes, "exp"))
    # The score matrix of 16 x 1024 x 1024 float32 is the 64 MiB the text names.
    assert passes["score_matrix_bytes"] == 16 * 1024 * 1024 * 4 and values["passes_matrix_size"] == "64 MiB"
    tile = passes["tile"]
    assert values["passes_tile"] == f"{tile['rows']} × {tile['cols']}"
    # The two kinds of pass, by the rule the text states.
    threshold = values["passes_faster_threshold"]
    faster = {p for p in PASSES if whole_over_tiled(passes, p)[1] >= threshold}
    not_faster = {p for p in PASSES if whole_over_tiled(passes, p)[2] <= 1.1}
    assert set(re.findall(r"[a-z]+", values["passes_faster"])) - {"and"} == faster
    assert set(re.findall(r"[a-z]+", values["passes_not_faster"])) - {"and"} == not_faster


def test_the_memory_bound_story_holds_in_the_committed_results(data):
    """What the text says in fixed words: the passes with one cheap operation per
    number ran much faster on tiles in the cache (memory-bound over the whole
    matrix); the exponential did not (compute-bound), it took longer than the
    subtraction on the tiles, and about as long over the whole matrix."""
    passes = data["passes"]
    for name in ("scale", "subtract", "divide"):
        assert whole_over_tiled(passes, name)[1] >= 1.5, name
    assert whole_over_tiled(passes, "exp")[2] <= 1.1
    assert ratio(passes["seconds"], "exp_tiled", "subtract_tiled")[1] > 1
    assert 0.7 < ratio(passes["seconds"], "exp", "subtract")[0] < 1.5


def test_the_two_effects_are_quoted_with_their_spread(values, data):
    curve = data["tile_curve"]
    seconds = curve["seconds"]
    points = curve["points"]
    sides = [p["side"] for p in points]
    tiles = [(p["tile"]["rows"], p["tile"]["cols"], p["tile"]["heads"]) for p in points]
    assert len(set(tiles)) == len(tiles) == len(sides)  # no tile measured twice
    (chosen,) = [p for p in points if p["chosen"]]
    assert chosen["tile"] == data["speed"]["tile"]
    whole = next(p for p in points if p["tile"]["rows"] == curve["shape"][1])
    assert values["curve_chosen_tile"] == f"{chosen['tile']['rows']} × {chosen['tile']['cols']}"
    assert values["curve_whole_tile"] == f"{whole['tile']['rows']} × {whole['tile']['cols']}"
    passes_effect = ratio(seconds, f"{chosen['side']}/shifted", f"{chosen['side']}/shift_free")
    assert_quotes(values["curve_passes"], passes_effect)
    _, q1, q3 = passes_effect
    verdict = values["curve_passes_verdict"]
    assert ("faster" in verdict, "slower" in verdict, "no difference" in verdict) == (q1 > 1, q3 < 1, q1 <= 1 <= q3)
    beyond = sum(ratio(seconds, f"{s}/shifted", f"{s}/shift_free")[1] > 1 for s in sides)
    assert values["curve_passes_sides"] == beyond and values["curve_sides"] == len(sides)
    quoted = {"shift_free": values["curve_tile_shift_free"], "shifted": values["curve_tile_shifted"]}
    quoted["products"] = values["curve_tile_products"]
    for path, text in quoted.items():
        assert_quotes(text, ratio(seconds, f"{whole['side']}/{path}", f"{chosen['side']}/{path}"))
    _, q1, q3 = ratio(seconds, f"{whole['side']}/shifted", f"{chosen['side']}/shifted")
    verdict = values["curve_tile_verdict"]
    tell = "cannot tell" in verdict
    chosen_first = verdict.find("chosen") < verdict.find("whole")  # which tile the sentence says was faster
    assert (not tell and chosen_first, not tell and not chosen_first, tell) == (q1 > 1, q3 < 1, q1 <= 1 <= q3)
    # The curve's tiles are those lib.tiles gives for each side, from the recorded L2 size.
    l2 = data["machine"]["caches"].get("L2", tiling.DEFAULT_L2_BYTES)
    for point in points:
        side = None if point["side"] == "chosen" else int(point["side"])
        want = tiling.choose_tile(1024, 1024, 64, 64, 4, heads=16, budget_bytes=l2 // 2, side=side)
        assert point["tile"] == want._asdict()
    assert data["machine"]["tile_budget_bytes"] == l2 // 2


def test_the_causal_tile_count_and_time_at_the_benchmark_s_size(values, data):
    """The tiles a causal call computes at n = 1024, derived from lib.tiles and
    counted with plain loops, and the measured times, from the results file."""
    l2 = data["machine"]["caches"].get("L2", tiling.DEFAULT_L2_BYTES)
    n = data["speed"]["shape"][1]
    tile = tiling.choose_tile(n, n, 64, 64, 4, heads=16, budget_bytes=l2 // 2)
    assert data["speed"]["tile"] == tile._asdict()
    row_starts, col_starts = range(0, n, tile.rows), range(0, n, tile.cols)
    # A tile is computed when some query in it may see some key in it: its first
    # key comes no later than its last query.
    computed = sum(1 for i0 in row_starts for j0 in col_starts if j0 <= min(i0 + tile.rows, n) - 1)
    total = len(row_starts) * len(col_starts)
    assert (values["causal_side"], values["causal_tiles"]) == (len(row_starts), total)
    assert (values["causal_kept"], values["causal_skipped"]) == (computed, total - computed)
    assert values["causal_share_of_tiles"] == pytest.approx(computed / total)
    seconds = data["speed"]["seconds"]
    causal, unmasked = statistics.median(seconds["blocked_causal"]), statistics.median(seconds["blocked"])
    assert values["causal_ms"] == pytest.approx(1e3 * causal) and values["causal_unmasked_ms"] == pytest.approx(
        1e3 * unmasked
    )
    assert values["causal_share_of_time"] == pytest.approx(causal / unmasked)
    # With 342-row tiles (a 2 MiB L2), 6 of 9 tiles are computed.
    wide = tiling.choose_tile(n, n, 64, 64, 4, heads=16, budget_bytes=2**20)
    assert wide.rows == 342
    assert sum(1 for i0 in range(0, n, 342) for j0 in range(0, n, 342) if j0 <= min(i0 + 342, n) - 1) == 6


def test_the_memory_figures_and_the_memory_ratio(values, data):
    cases = {(c["impl"], c["n"]): c for c in data["memory"]["cases"]}
    sizes = sorted({n for _, n in cases})
    assert (values["memory_smallest_n"], values["memory_largest_n"]) == (sizes[0], sizes[-1]) == (1024, 16384)
    for n in sizes:
        ref = cases[("reference", n)]["traced_extra_bytes"]
        assert n * n * 4 <= ref <= 1.1 * n * n * 4  # "grows like n², the size of its score matrix"
    assert values["memory_reference_smallest"] == cases[("reference", sizes[0])]["traced_extra_bytes"] / 2**20
    assert values["memory_reference_largest"] == cases[("reference", sizes[-1])]["traced_extra_bytes"] / 2**20
    blocked = [cases[("blocked", n)]["traced_extra_bytes"] for n in sizes]
    assert values["memory_blocked_most"] == max(blocked) / 2**20 < 1  # "a constant amount"
    assert max(blocked) / min(blocked) < 1.5  # flat while n grows 16-fold
    for key, n in (("memory_at_4096", 4096), ("memory_at_largest", sizes[-1])):
        share = cases[("blocked", n)]["traced_extra_bytes"] / cases[("reference", n)]["traced_extra_bytes"]
        assert values[key] == f"1/{1 / share:.0f}"


def test_the_quiz_s_numeric_answers():
    quiz = json.loads((ROOT / "chapters" / "08_online_softmax.quiz.json").read_text())
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
        m = re.search(rf"{name}: B may be at most ([0-9.]+)", page_text)
        assert m and float(m[1]) == pytest.approx(limit, abs=0.006), name
