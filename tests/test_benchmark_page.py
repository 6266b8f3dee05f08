"""The benchmark page, ``docs/benchmarks.md``, is what ``benchmarks/results_page.py`` writes from the committed results.

The README and the guides quote no benchmark figure: they link to that page.
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
    text = PAGE.read_text(encoding="utf-8")
    for result in sorted(RESULTS.glob("*.json")):
        assert f"](../benchmarks/results/{result.name})" in text, result.name
        script = json.loads(result.read_text()).get("generated_by", f"benchmarks/{result.stem}.py")
        assert f"](../{script})" in text, script


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
    assert f"{results['submissions']} submissions of {results['assignment']}" in text
    assert f"{nbgrader / results['submissions']:.2f} s per notebook" in text
    assert (
        f"| median | {nbgrader:.1f} | {ours:.1f} | {nbgrader / ours:.2f}x | {bare:.1f} | {nbgrader / bare:.2f}x |"
        in text
    )
    rounds = zip(runs["nbgrader autograde"], runs["classgrader"], runs["classgrader --no-kernel-record"])
    for i, (n, t, b) in enumerate(rounds, start=1):
        assert f"| {i} | {n:.1f} | {t:.1f} | {n / t:.2f}x | {b:.1f} | {n / b:.2f}x |" in text
    assert all(results["same_scores_as_nbgrader"].values())
    assert "The two graders' gradebooks hold the same scores." in text
    assert re.search(rf"in {['no', 'one', 'two', 'three', 'four', 'five'][results['rounds']]} rounds", text)


def test_the_page_gives_what_the_record_run_adds_from_the_committed_profile():
    stages = json.loads((RESULTS / "class_grading_profile.json").read_text())["stages"]
    score = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("score run:"))
    record = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("record run:"))
    text = " ".join(section("The stages of grading one submission").split())
    assert f"The scoring run's stages take {score:.0f} ms per submission and the record run's {record:.0f} ms" in text
    assert (
        f"the record run (on by default) adds about {round(100 * record / score, -1):.0f} % to the workers' part"
        in text
    )
    for s in stages:
        assert f"| {s['stage']} | {s['ms_per_submission']:.1f} |" in text


def test_the_page_gives_the_cluster_runs_wall_times_and_dask_overhead():
    results = json.loads((RESULTS / "class_grading_cluster.json").read_text())
    text = section("Grading a class on a Dask cluster")
    pool = results["local_pool"]
    assert f"| local pool, {pool['workers']} workers | {pool['seconds']:.1f} | {pool['per_second']:.2f} |" in text
    for workers, run in results["cluster"].items():
        share = 100 * run["overhead_per_task_seconds"] / run["mean_task_seconds"]
        row = next(line for line in text.splitlines() if line.startswith(f"| cluster, {workers} worker"))
        assert f"| {run['seconds']:.1f} | {run['per_second']:.2f} | {run['mean_task_seconds']:.2f} |" in row
        assert f"{1000 * run['overhead_per_task_seconds']:.1f} ({share:.1f} %)" in row
        assert row.endswith("| yes |") == run["same_scores_as_local"]


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
        rows = [line for line in text.splitlines() if line.startswith(f"| {label} | the two products")]
        assert f" | {median:.2f}x ({q1:.2f}-{q3:.2f}) |" in rows[0], rows


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
        minutes, seconds = divmod(run["total_s"], 60)
        row = next(line for line in text.splitlines() if line.startswith(f"| {run['label']} |"))
        assert f"**{int(minutes)} min {seconds:04.1f} s**" in row, row
        assert row.endswith(" | " + ", ".join(f"{s:.2f}" for s in run["rebuilds_s"]) + " |"), row
