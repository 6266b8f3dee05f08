"""The benchmark page, ``docs/benchmarks.md``, is what ``benchmarks/results_page.py`` writes from the committed results.

The guides quote no benchmark figure: they link to that page; the README gives
the test command's times from it in whole minutes.
Here the committed page is compared with a fresh run of its script, and the
class grader's figures are recomputed from the results files' raw seconds
(medians and per-round ratios) and milliseconds, independently of the script,
so that a re-run whose page was not regenerated, or a figure the script
computes wrong, fails.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
SCRIPT = ROOT / "benchmarks" / "results_page.py"
RESULTS = ROOT / "benchmarks" / "results"


def section(title: str) -> str:
    """The text of the page's section ``## title``, up to the next section."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def rows(text: str) -> list[list[str]]:
    """The cells of every row of every Markdown table in ``text`` (the separator rows left out)."""
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()]
    return [row for row, line in zip(cells, text.splitlines()) if line.startswith("|") and set(row[0]) != {"-"}]


def row(text: str, *first: str) -> list[str]:
    """The cells after ``first`` of the one table row of ``text`` that starts with the cells ``first``."""
    found = [r[len(first) :] for r in rows(text) if tuple(r[: len(first)]) == first]
    assert len(found) == 1, (first, found)
    return found[0]


def assert_shows(cells: list[str] | str, *expected: tuple[float, int]) -> None:
    """The numbers written in ``cells``, in order, are the ``(value, decimals)`` of ``expected``,
    each rounded to its decimals (every figure on the page is positive)."""
    written = " ".join(cells) if isinstance(cells, list) else cells
    shown = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", written)]
    assert len(shown) == len(expected), (written, expected)
    for number, (value, decimals) in zip(shown, expected):
        assert abs(number - value) <= 0.5 * 10.0**-decimals + 1e-9, (written, number, value)


def results_page() -> ModuleType:
    spec = importlib.util.spec_from_file_location("results_page", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_what_its_script_writes_from_the_committed_results(tmp_path):
    out = tmp_path / "benchmarks.md"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], check=True, capture_output=True, cwd=tmp_path)
    assert out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8"), (
        "docs/benchmarks.md is stale: run .venv/bin/python benchmarks/results_page.py and commit the page"
    )


def test_every_results_file_has_its_section_and_links_to_its_script():
    links = set(re.findall(r"\]\(\.\./([^)]+)\)", PAGE.read_text(encoding="utf-8")))
    for result in sorted(RESULTS.glob("*.json")):
        script = json.loads(result.read_text()).get("generated_by", f"benchmarks/{result.stem}.py")
        assert {f"benchmarks/results/{result.name}", script} <= links, result.name


def test_a_results_file_with_no_section_stops_the_script_naming_it(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    (results / "new_benchmark.json").write_text("{}")
    with pytest.raises(SystemExit, match="new_benchmark.json"):
        results_page().page(results)


def test_the_page_gives_the_medians_and_ratios_of_the_committed_grading_run():
    results = json.loads((RESULTS / "class_grading_speed.json").read_text())
    runs = results["seconds_per_round"]
    nbgrader = statistics.median(runs["nbgrader autograde"])
    ours = statistics.median(runs["classgrader"])
    bare = statistics.median(runs["classgrader --no-kernel-record"])
    text = section("Grading a class: `./course grade` against `nbgrader autograde`")
    graded = re.search(r"(\d+) submissions of (\w+)", text)
    assert graded and (int(graded[1]), graded[2]) == (results["submissions"], results["assignment"]), graded
    per_notebook = re.search(r"([\d.]+) s per notebook", text)
    assert per_notebook, text
    assert_shows(per_notebook[1], (nbgrader / results["submissions"], 2))
    assert_shows(row(text, "median"), (nbgrader, 1), (ours, 1), (nbgrader / ours, 2), (bare, 1), (nbgrader / bare, 2))
    rounds = zip(runs["nbgrader autograde"], runs["classgrader"], runs["classgrader --no-kernel-record"])
    for i, (n, t, b) in enumerate(rounds, start=1):
        assert_shows(row(text, str(i)), (n, 1), (t, 1), (n / t, 2), (b, 1), (n / b, 2))
    assert all(results["same_scores_as_nbgrader"].values())
    assert "hold the same scores" in text
    assert re.search(rf"in {['no', 'one', 'two', 'three', 'four', 'five'][results['rounds']]} rounds", text)


def test_the_page_gives_what_the_record_run_adds_from_the_committed_profile():
    stages = json.loads((RESULTS / "class_grading_profile.json").read_text())["stages"]
    score = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("score run:"))
    record = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("record run:"))
    table = section("The stages of grading one submission")
    text = " ".join(table.split())
    taken = re.search(r"scoring run's stages take (\d+) ms .*? record run's (\d+) ms", text)
    adds = re.search(r"adds about (\d+) %", text)
    assert taken and adds, text
    assert_shows(taken[1] + " " + taken[2], (score, 0), (record, 0))
    assert int(adds[1]) == round(100 * record / score, -1)
    for s in stages:
        assert_shows(row(table, s["stage"])[0], (s["ms_per_submission"], 1))


def test_the_page_gives_the_cluster_runs_wall_times_and_dask_overhead():
    results = json.loads((RESULTS / "class_grading_cluster.json").read_text())
    text = section("Grading a class on a Dask cluster")
    pool = results["local_pool"]
    assert_shows(row(text, f"local pool, {pool['workers']} workers"), (pool["seconds"], 1), (pool["per_second"], 2))
    for workers, run in results["cluster"].items():
        share = 100 * run["overhead_per_task_seconds"] / run["mean_task_seconds"]
        label = f"cluster, {workers} worker" + ("s" if int(workers) > 1 else "")
        seconds, per_second, per_task, overhead, _, same = row(text, label)
        figures = (run["seconds"], 1), (run["per_second"], 2), (run["mean_task_seconds"], 2)
        assert_shows([seconds, per_second, per_task], *figures)
        assert_shows(overhead, (1000 * run["overhead_per_task_seconds"], 1), (share, 1))
        assert (same == "yes") == run["same_scores_as_local"], (label, same)


def test_the_page_gives_the_attention_ratios_to_the_products_each_runs():
    """Each ratio on the page is the median, and the quartiles, of the per-round ratios of the raw times."""
    speed = json.loads((RESULTS / "attention_speed_memory.json").read_text())["speed"]
    seconds = speed["seconds"]
    text = section("Attention: speed and memory")
    products = {"reference": "products_whole", "blocked": "products_tiled", "blocked_causal": "products_tiled_causal"}
    for name, over in products.items():
        per_round = [a / b for a, b in zip(seconds[name], seconds[over])]
        q1, median, q3 = statistics.quantiles(per_round, n=4, method="inclusive")
        label = name.replace("_causal", ", causal")
        ratios = [r[-1] for r in rows(text) if r[0] == label and r[1].startswith("the two products")]
        assert_shows(ratios[0], (median, 2), (q1, 2), (q3, 2))


def test_the_page_gives_each_test_runs_phases_which_add_up_to_its_total():
    results = json.loads((RESULTS / "course_test_time.json").read_text())
    text = section("A developer's wait: the test run and a rebuild")
    assert results["runs"], "the results hold no run"
    for run in results["runs"]:
        assert run["exit_code"] == 0 and run["pytest_sessions"], run
        for session in run["pytest_sessions"]:
            assert " passed" in session["counts"] and not re.search(r"failed|error", session["counts"]), session
        assert set(run["phases_s"]) == {"setup", "lint_and_build", "tests"}, run["phases_s"]
        assert sum(run["phases_s"].values()) == pytest.approx(run["total_s"], abs=0.5)
        cells = row(text, run["label"])
        bold = [c for c in cells if c.startswith("**")]  # the total, in bold
        total = re.fullmatch(r"\*\*(\d+) min (\d\d\.\d) s\*\*", bold[0]) if len(bold) == 1 else None
        assert total, cells
        minutes, seconds = divmod(run["total_s"], 60)
        assert int(total[1]) == minutes and abs(float(total[2]) - seconds) <= 0.05 + 1e-9, (bold, run["total_s"])
        assert_shows(cells[-1], *((s, 2) for s in run["rebuilds_s"]))
