"""The instructors' guide's class-grading speed figures are the committed benchmark results', not
remembered ones.

``benchmarks/class_grading_speed.py`` writes
``benchmarks/results/class_grading_speed.json``; the **Speed** paragraph of
``solution_book/guide_grader.md`` quotes it, and ``guide_cluster.md`` what the
record run adds. Each quoted figure is recomputed here from that file's
raw seconds (medians and per-round ratios), and what the record run adds
from ``class_grading_profile.json``, so a re-run that is not copied into the
guide, or a figure typed wrong, fails.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRADER_PAGE = ROOT / "solution_book" / "guide_grader.md"
CLUSTER_PAGE = ROOT / "solution_book" / "guide_cluster.md"
RESULTS = json.loads((ROOT / "benchmarks" / "results" / "class_grading_speed.json").read_text())


def speed_paragraph() -> str:
    text = GRADER_PAGE.read_text()
    start = text.index("**Speed.** `benchmarks/class_grading_speed.py`")
    end = text.find("\n\n", start)
    return " ".join(text[start : end if end != -1 else len(text)].split())


def test_the_readme_quotes_the_medians_and_ratios_of_the_committed_run():
    runs = RESULTS["seconds_per_round"]
    nbgrader = statistics.median(runs["nbgrader autograde"])
    ours = statistics.median(runs["classgrader"])
    bare = statistics.median(runs["classgrader --no-kernel-record"])
    text = speed_paragraph()
    assert f"`nbgrader autograde` {nbgrader:.1f} s ({nbgrader / RESULTS['submissions']:.2f} s per notebook" in text
    assert f"`./course grade` {ours:.1f} s with its in-kernel record run, **{nbgrader / ours:.2f}x faster**" in text
    rounds = ", ".join(f"{n / t:.2f}x" for n, t in zip(runs["nbgrader autograde"], runs["classgrader"]))
    assert f"(rounds {rounds})" in text
    assert f"{bare:.1f} s ({nbgrader / bare:.2f}x) with `--no-kernel-record`" in text
    assert all(RESULTS["same_scores_as_nbgrader"].values())
    assert re.search(rf"in {['no', 'one', 'two', 'three', 'four', 'five'][RESULTS['rounds']]} rounds", text)


def test_the_readme_quotes_what_the_record_run_adds_from_the_committed_profile():
    stages = json.loads((ROOT / "benchmarks" / "results" / "class_grading_profile.json").read_text())["stages"]
    score = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("score run:"))
    record = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("record run:"))
    text = " ".join(CLUSTER_PAGE.read_text().split())
    assert (
        f"the record run (on by default) adds about {round(100 * record / score, -1):.0f} % to the workers' part "
        f"(it shares the scoring run's sandbox and imports: {record:.0f} ms against {score:.0f} ms" in text
    )
