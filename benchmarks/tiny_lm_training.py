"""How long chapter 11's tiny model takes to train, on one core.

Trains ``lib.tiny_lm.Config()`` (the chapter's run: 600 Adam steps, batches of
64 sequences of 16 tokens) in a fresh subprocess with one BLAS thread, a few
times, and reports the wall-clock time and the CPU time of each run (CPU time
is less blurred by other work on a busy machine), with the final held-out
accuracy on the repeated half. Run it from the repository root:

    .venv/bin/python benchmarks/tiny_lm_training.py [--repeats 3]

It prints a table and writes ``benchmarks/results/tiny_lm_training.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}

CHILD = """
import json, time
import numpy as np
from sdpa_course.lib import tiny_lm
cfg = tiny_lm.Config()
cpu0, wall0 = time.process_time(), time.perf_counter()
run = tiny_lm.train(cfg)
cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
held_out = tiny_lm.make_batch(np.random.default_rng(2024), 1000, cfg.half, cfg.vocab, cfg.min_half)
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "steps": cfg.steps,
                  "held_out_accuracy": tiny_lm.accuracy(run.params, *held_out)}))
"""


def one_run() -> dict[str, float]:
    """Train once in a fresh process with one BLAS thread; its times and accuracy."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env={**os.environ, **ONE_THREAD},
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run() for _ in range(args.repeats)]
    for n, run in enumerate(runs, 1):
        print(
            f"run {n}: {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU for {run['steps']:.0f} steps; "
            f"held-out accuracy {run['held_out_accuracy']:.3f}"
        )
    summary = {
        "machine": platform.processor() or platform.machine(),
        "load_average_1min": os.getloadavg()[0],
        "runs": runs,
        "best_wall_s": min(r["wall_s"] for r in runs),
        "best_cpu_s": min(r["cpu_s"] for r in runs),
    }
    print(f"best: {summary['best_wall_s']:.1f} s wall, {summary['best_cpu_s']:.1f} s CPU")
    out = ROOT / "benchmarks" / "results" / "tiny_lm_training.json"
    out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
