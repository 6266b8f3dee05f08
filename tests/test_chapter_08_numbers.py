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
