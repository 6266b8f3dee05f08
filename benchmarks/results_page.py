"""Write ``docs/benchmarks.md``, the page of every committed benchmark result.

Each script in ``benchmarks/`` writes its figures to ``benchmarks/results/<name>.json``.
This script turns those files into one Markdown page: per benchmark, what it
measures (the first paragraph of the script's own docstring), the machine and
date the file records, and the figures as tables. The README and the guides
link to the page rather than quote figures in their sentences, so a new run
needs no prose edited: run the benchmark, then

    .venv/bin/python benchmarks/results_page.py

and commit the JSON file with the page. ``tests/test_benchmark_page.py``
fails when the committed page is not what this script writes from the
committed JSON. A results file with no section here stops the script with its
name, so that no result is left off the page unseen.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def what_it_measures(script: str) -> str:
    """The first paragraph of a benchmark script's docstring, in Markdown."""
    doc = ast.get_docstring(ast.parse((ROOT / "benchmarks" / script).read_text(encoding="utf-8")))
    if not doc:
        raise SystemExit(f"benchmarks/{script} has no docstring to say what it measures")
    return " ".join(doc.split("\n\n")[0].split()).replace("``", "`")


def header(title: str, script: str, result: str, machine: str, date: str) -> str:
    return (
        f"## {title}\n\n{what_it_measures(script)} Script: [`benchmarks/{script}`](../benchmarks/{script}); "
        f"results: [`benchmarks/results/{result}`](../benchmarks/results/{result}).\n\n"
        f"Machine: {machine}. Date: {date}."
    )


def rounds_phrase(n: int) -> str:
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)


def spread(r: dict[str, float], unit: str = "x") -> str:
    """A median and the middle half of the rounds (first to third quartile)."""
    return f"{r['median']:.2f}{unit} ({r['q1']:.2f}-{r['q3']:.2f})"


def attention_speed_memory(data: dict[str, Any]) -> str:
    m = data["machine"]
    threads = ", ".join(f"{k}={v}" for k, v in sorted(m.get("environment", {}).items()))
    machine = (
        f"{m['processor']}, {m['logical_cores']} logical cores, {m['memory_gib']} GiB, Python {m['python']}, "
        f"numpy {m['numpy']}, BLAS {m['blas']}"
        + (f" ({threads})" if threads else "")
        + ", caches "
        + ", ".join(f"{k} {v // 1024} KiB" for k, v in m["caches"].items())
    )
    speed = data["speed"]
    shape = " x ".join(str(s) for s in speed["shape"])
    names = {
        "qk_whole": "`Q K^T` alone, whole matrices",
        "pv_whole": "`P V` alone, whole matrices",
        "products_whole": "the two products, whole matrices (the reference's)",
        "products_tiled": "the two products, tile by tile (blocked attention's)",
        "products_tiled_causal": "the two products, the tiles causal blocked attention computes",
        "reference": "reference",
        "blocked": "blocked",
        "reference_causal": "reference, causal",
        "blocked_causal": "blocked, causal",
        "torch": "PyTorch",
        "torch_causal": "PyTorch, causal",
    }
    ms = {k: 1000 * spread["median"] for k, spread in speed["spread"].items()}
    speed_rows = [
        [names[k], f"{ms[k]:.1f}", f"{1000 * speed['spread'][k]['q1']:.1f}-{1000 * speed['spread'][k]['q3']:.1f}"]
        for k in names
        if k in speed["spread"]
    ]
    ratio_rows = [[names[r["of"]], names[r["over"]], spread(r)] for r in speed["ratios"].values()]
    passes = data["passes"]
    pass_rows = [
        [
            k,
            f"{1000 * passes['spread'][k]['median']:.1f}",
            f"{1000 * passes['spread'][k + '_tiled']['median']:.1f}",
            spread(passes["ratios"][f"{k}_whole_over_tiled"]),
        ]
        for k in ("scale", "max", "subtract", "exp", "sum", "divide")
    ]
    curve = data["tile_curve"]
    curve_rows = [
        [
            p["side"] + (" (chosen from the cache)" if p["chosen"] else ""),
            f"{p['tile']['rows']} x {p['tile']['cols']} x {p['tile']['heads']}",
            f"{p['tile_bytes'] // 1024}",
            *(
                f"{1000 * curve['spread'][p['side'] + '/' + path]['median']:.1f}"
                for path in ("shift_free", "shifted", "products")
            ),
            spread(p["ratios"]["passes"]),
        ]
        for p in curve["points"]
    ]
    cases: dict[int, dict[str, int]] = {}
    for case in data["memory"]["cases"]:
        cases.setdefault(case["n"], {})[case["impl"]] = case["traced_extra_bytes"]
    memory_rows = [
        [n, f"{c['reference'] / 2**20:.2f}", f"{c['blocked'] / 2**20:.2f}", f"{c['blocked'] / c['reference']:.4f}"]
        for n, c in sorted(cases.items())
    ]
    return "\n\n".join(
        [
            header(
                "Attention: speed and memory",
                "attention_speed_memory.py",
                "attention_speed_memory.json",
                machine,
                data["date"],
            ),
            f"**Speed**, {speed['dtype']} inputs of shape ({shape}), median of {speed['rounds']} rounds "
            "taken in turns, with the middle half of the rounds (first to third quartile):",
            table(["what runs", "ms", "middle half (ms)"], speed_rows),
            "**Ratios**, taken round by round (each from calls of the same round): median (middle half). Each "
            "implementation against the products it runs, then blocked attention against the whole products and "
            "against the reference:",
            table(["time of", "over the time of", "ratio"], ratio_rows),
            "**The formula's passes**, over the whole score matrix and over one cache-sized tile repeated to "
            "cover as many scores (ms, medians), and whole over tiled:",
            table(["pass", "whole matrix", "tiles", "whole / tiles"], pass_rows),
            "**Tile size**, blocked attention, ms (medians) on each path and its two products alone at that tile, "
            "and the shifted path over the shift-free one:",
            table(
                [
                    "tile side",
                    "tile (rows x cols x heads)",
                    "tile KiB",
                    "shift-free",
                    "shifted",
                    "products",
                    "shifted / shift-free",
                ],
                curve_rows,
            ),
            f"**Memory**, peak extra memory traced, one head, d = {data['memory']['d']}, {data['memory']['dtype']}:",
            table(["n", "reference MiB", "blocked MiB", "blocked / reference"], memory_rows),
        ]
    )


def class_grading_speed(data: dict[str, Any]) -> str:
    runs = data["seconds_per_round"]
    nbgrader, ours, bare = runs["nbgrader autograde"], runs["classgrader"], runs["classgrader --no-kernel-record"]
    rows: list[list[object]] = [
        [i + 1, f"{n:.1f}", f"{o:.1f}", f"{n / o:.2f}x", f"{b:.1f}", f"{n / b:.2f}x"]
        for i, (n, o, b) in enumerate(zip(nbgrader, ours, bare))
    ]
    med = [statistics.median(r) for r in (nbgrader, ours, bare)]
    rows.append(
        [
            "median",
            f"{med[0]:.1f}",
            f"{med[1]:.1f}",
            f"{med[0] / med[1]:.2f}x",
            f"{med[2]:.1f}",
            f"{med[0] / med[2]:.2f}x",
        ]
    )
    kinds = ", ".join(f"{n} {kind}" for kind, n in data["kinds"].items())
    same = all(data["same_scores_as_nbgrader"].values())
    return "\n\n".join(
        [
            header(
                "Grading a class: `./course grade` against `nbgrader autograde`",
                "class_grading_speed.py",
                "class_grading_speed.json",
                data["machine"],
                data["date"],
            ),
            f"{data['submissions']} submissions of {data['assignment']} ({kinds}), {data['workers']} workers, "
            f"{data['sandbox']} sandbox, in {rounds_phrase(data['rounds'])} rounds one after the other. "
            f"`nbgrader autograde` grades one notebook after another: {med[0] / data['submissions']:.2f} s per "
            f"notebook (median). Wall seconds per round, and nbgrader's time over the class grader's:",
            table(
                [
                    "round",
                    "nbgrader autograde",
                    "./course grade",
                    "ratio",
                    "./course grade --no-kernel-record",
                    "ratio",
                ],
                rows,
            ),
            "The two graders' gradebooks hold the same scores."
            if same
            else "**The two graders' gradebooks did not hold the same scores in this run.**",
        ]
    )


def class_grading_profile(data: dict[str, Any]) -> str:
    stages = data["stages"]
    score = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("score run:"))
    record = sum(s["ms_per_submission"] for s in stages if s["stage"].startswith("record run:"))
    rows = [[s["stage"], f"{s['ms_per_submission']:.1f}", f"{100 * s['share_of_wall']:.1f} %"] for s in stages]
    return "\n\n".join(
        [
            header(
                "The stages of grading one submission",
                "class_grading_profile.py",
                "class_grading_profile.json",
                data["machine"],
                data["date"],
            ),
            f"{data['submissions']} submissions of {data['assignment']}, {data['workers']} worker, "
            f"{data['sandbox']} sandbox, in-kernel record run {'on' if data['kernel_record'] else 'off'}; "
            f"{data['wall_seconds']:.2f} s wall, 1-minute load average {data['load_average_1min']}.",
            table(["stage", "ms per submission", "share of the wall time"], rows),
            f"The scoring run's stages take {score:.0f} ms per submission and the record run's {record:.0f} ms: "
            f"the record run (on by default) adds about {round(100 * record / score, -1):.0f} % to the "
            "workers' part.",
        ]
    )


def class_grading_cluster(data: dict[str, Any]) -> str:
    pool = data["local_pool"]
    rows: list[list[object]] = [
        [
            f"local pool, {pool['workers']} workers",
            f"{pool['seconds']:.1f}",
            f"{pool['per_second']:.2f}",
            "",
            "",
            "",
            "",
        ]
    ]
    for workers, c in data["cluster"].items():
        overhead = c["overhead_per_task_seconds"]
        rows.append(
            [
                f"cluster, {workers} worker{'s' if workers != '1' else ''}",
                f"{c['seconds']:.1f}",
                f"{c['per_second']:.2f}",
                f"{c['mean_task_seconds']:.2f}",
                f"{1000 * overhead:.1f} ({100 * overhead / c['mean_task_seconds']:.1f} %)",
                f"{c['fixed_seconds_per_run']:.1f}",
                "yes" if c["same_scores_as_local"] else "**no**",
            ]
        )
    paper = data["paper_10000_on_10x16"]
    return "\n\n".join(
        [
            header(
                "Grading a class on a Dask cluster",
                "class_grading_cluster.py",
                "class_grading_cluster.json",
                data["machine"],
                data["date"],
            ),
            f"{data['submissions']} submissions of {data['assignment']}, in-kernel record run "
            f"{'on' if data['kernel_record'] else 'off'}, on local Dask clusters of single-threaded workers "
            "against the local pool:",
            table(
                [
                    "",
                    "wall s",
                    "submissions per s",
                    "s per task",
                    "Dask's overhead per task, ms",
                    "fixed s per run",
                    "same scores as the local pool",
                ],
                rows,
            ),
            f"The client spends {1000 * data['client_seconds_per_submission']:.0f} ms per submission (result files, "
            f"then the gradebook), one after another. A paper estimate for {paper['submissions']:,} submissions "
            f"on {paper['machines']} machines of {paper['cores_each']} cores: the workers need about "
            f"{paper['workers_seconds']:.0f} s and the one client about {paper['client_seconds']:.0f} s, so "
            f"the slower of the two sets the estimate: {paper['estimate_seconds']:.0f} s.",
        ]
    )


def jupyterlite_first_output(data: dict[str, Any]) -> str:
    keys = ("kernel_ready_s", "first_cell_done_s", "first_output_s")

    def rows(runs: list[dict[str, Any]], median: dict[str, float]) -> list[list[object]]:
        out: list[list[object]] = [
            [i + 1, *(f"{r[k]:.1f}" for k in keys), r["load_average_1min"]] for i, r in enumerate(runs)
        ]
        return [*out, ["median", *(f"{median[k]:.1f}" for k in keys), ""]]

    head = ["run", "kernel ready, s", "first cell done, s", "first output, s", "1-minute load average"]
    parts = [
        header(
            "Python's first answer in the in-browser Jupyter",
            "jupyterlite_first_output.py",
            "jupyterlite_first_output.json",
            data["machine"],
            data["date"],
        ),
        f"Notebook `{data['notebook']}`. {data['note']}",
        "The site:",
        table(head, rows(data["runs"], data["median"])),
    ]
    # Each other site measured in alternation with it (--baseline [NAME=]SITE): NAME_runs.
    others = [key.removesuffix("_runs") for key in data if key.endswith("_runs") and key != "runs"]
    for name in others:
        shown = "The baseline" if name == "baseline" else f"`{name}`"
        parts += [f"{shown}:", table(head, rows(data[f"{name}_runs"], data[f"{name}_median"]))]
    second = [
        (name, data[f"{prefix}second_visit_median"])
        for name, prefix in (("site", ""), *((name, f"{name}_") for name in others))
        if f"{prefix}second_visit_median" in data
    ]
    if second:
        parts += [
            "A second visit (the notebook opened again in the same browser profile, its caches warm), median:",
            table(
                ["", "kernel ready, s", "first cell done, s", "first output, s"],
                [[name, *(f"{median[k]:.1f}" for k in keys)] for name, median in second],
            ),
        ]
    return "\n\n".join(parts)


def course_test_time(data: dict[str, Any]) -> str:
    def minutes(seconds: float | None) -> str:
        return "" if seconds is None else f"{int(seconds // 60)} min {seconds % 60:04.1f} s"

    def pytest_runs(run: dict[str, Any]) -> str:
        each = run.get("pytest_s") or [sum(session["seconds"] for session in run["pytest_sessions"])]
        median = run.get("pytest_median_s", each[0])
        return ", ".join(minutes(t) for t in each) + (f" (median {minutes(median)})" if len(each) > 1 else "")

    def cores(shares: dict[str, float] | None) -> str:
        return ", ".join(f"{k} {100 * v:.0f} %" for k, v in shares.items()) if shares else "not measured"

    rows = [
        [
            run["label"],
            f"`{run['commit'][:12]}`",
            f"`{run.get('command', './course test')}`",
            str(run.get("burners", 0)),
            *(minutes(run["phases_s"].get(phase)) for phase in ("setup", "lint_and_build", "tests")),
            f"**{minutes(run['total_s'])}**",
            pytest_runs(run),
            "; ".join(session["counts"] for session in run["pytest_sessions"]) or f"exit code {run['exit_code']}",
            cores(run.get("tests_cpu_shares")),
            ", ".join(f"{s:.2f}" for s in run["rebuilds_s"]),
        ]
        for run in data["runs"]
    ]
    return "\n\n".join(
        [
            header(
                "A developer's wait: the test run and a rebuild",
                "course_test_time.py",
                "course_test_time.json",
                data["machine"],
                data["date"],
            ),
            data["note"],
            table(
                [
                    "run",
                    "commit",
                    "command",
                    "CPU-bound processes beside it",
                    "setup",
                    "lint and build",
                    "tests",
                    "the command in all (first run)",
                    "pytest, each run in the clone",
                    "pytest's summary (one per pytest session)",
                    "the cores' time during the tests",
                    "rebuilds with nothing changed, s",
                ],
                rows,
            ),
        ]
    )


def tiny_lm_training(data: dict[str, Any]) -> str:
    rows = [
        [i + 1, f"{r['wall_s']:.1f}", f"{r['cpu_s']:.2f}", r["steps"], f"{r['held_out_accuracy']:.4f}"]
        for i, r in enumerate(data["runs"])
    ]
    return "\n\n".join(
        [
            header(
                "Training chapter 11's tiny model",
                "tiny_lm_training.py",
                "tiny_lm_training.json",
                data["machine"],
                "not recorded",
            ),
            f"1-minute load average {data['load_average_1min']:.1f}; best wall time {data['best_wall_s']:.1f} s, "
            f"best CPU time {data['best_cpu_s']:.2f} s.",
            table(["run", "wall s", "CPU s", "steps", "held-out accuracy"], rows),
        ]
    )


#: One section per results file, in the page's order.
SECTIONS: dict[str, Callable[[dict[str, Any]], str]] = {
    "attention_speed_memory.json": attention_speed_memory,
    "class_grading_speed.json": class_grading_speed,
    "class_grading_profile.json": class_grading_profile,
    "class_grading_cluster.json": class_grading_cluster,
    "jupyterlite_first_output.json": jupyterlite_first_output,
    "course_test_time.json": course_test_time,
    "tiny_lm_training.json": tiny_lm_training,
}


def page(results: Path = RESULTS) -> str:
    """The page's Markdown, from every ``*.json`` file in ``results``."""
    found = sorted(p.name for p in results.glob("*.json"))
    unknown = [name for name in found if name not in SECTIONS]
    if unknown:
        raise SystemExit(f"no section of benchmarks/results_page.py reads {', '.join(unknown)}: add one to SECTIONS")
    sections = []
    for name, section in SECTIONS.items():
        if name in found:
            sections.append(section(json.loads((results / name).read_text(encoding="utf-8"))))
    intro = (
        "# Benchmark results\n\n"
        "The figures of the committed benchmark runs, written by `benchmarks/results_page.py` from "
        "`benchmarks/results/*.json`: do not edit this page by hand. Each benchmark is a script in "
        "`benchmarks/`; run it, then the page's script, and commit both. Times depend on the machine and on "
        "what else ran on it: compare figures taken in one run, not across runs.\n\n"
        "Screenshots of the book on a phone, taken by `benchmarks/phone_screenshots.py`, are in "
        "[`benchmarks/results/phone_screenshots/`](../benchmarks/results/phone_screenshots/)."
    )
    return "\n\n".join([intro, *sections]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=PAGE, help="where to write the page (default docs/benchmarks.md)")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page(), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
