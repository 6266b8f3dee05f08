"""Wall time of ``./course grade`` against plain sequential ``nbgrader autograde``.

One run, one folder of submissions, both graders:

1. a scratch course (the repository's ``nbgrader_config.py`` and the
   assignment's source), released with ``nbgrader generate_assignment`` (not
   timed);
2. 40 submissions in nbgrader's ``submitted/`` layout, made from the committed
   notebooks by :mod:`devtools.sample_submissions` (as the class grader's tests): 30 correct, 5 blank and,
   for hw2, 5 partly right (a softmax that overflows on large logits);
3. ``nbgrader autograde ASSIGNMENT`` on that folder (sequential, one kernel
   per notebook), timed (steps 3 and 4 are repeated ``--repeat`` times, 3 by
   default, one after the other, and the medians are reported with each
   round's ratio: on a shared machine one run's figure says little);
4. ``python -m classgrader ASSIGNMENT submitted/`` on the same folder, with a
   fresh gradebook, timed: with its defaults (workers = cores, the extra
   in-kernel record run on) and with ``--no-kernel-record``;
5. both gradebooks read back: the two graders must agree on every score.

Run it from the repository root, as root (the root-mode sandbox) or as any
user (the user-namespace sandbox; see the instructors' guide, solution_book/guide_grader.md, *The sandbox's two modes*):

    .venv/bin/python benchmarks/class_grading_speed.py [--assignment hw2_stable_softmax] [-n 40]

It prints a table and writes ``benchmarks/results/class_grading_speed.json``.

With ``--cluster`` it measures the cluster mode instead (``./course grade
--cluster`` on local Dask clusters of 1, 2 and cores workers against the local
pool, 200 submissions by default): see ``benchmarks/class_grading_cluster.py``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing the course
# Every benchmark grades with a course secret of its own (sdpa_course/grading/seeds.py), so that no run makes
# one in the instructor's home or names it in this repository's nbgrader_config.py.
os.environ.setdefault("COURSE_GRADING_SECRET", "benchmark-secret")

from devtools.sample_submissions import Builder  # noqa: E402
from nbgrader_tools import scratch_course  # noqa: E402


def make_submissions(course: Path, assignment: str, n: int) -> dict[str, str]:
    """Write n submissions into course/submitted; return student -> kind."""
    import nbformat

    b = Builder(REPO, assignment)
    kinds = {}
    n_blank = n_partial = n // 8
    naive = None
    if assignment == "hw2_stable_softmax":
        naive = b.with_answer(
            f"def {b.function}(z):\n    e = np.exp(z)\n    return e / e.sum(axis=-1, keepdims=True)\n"
        )
    else:
        n_partial = 0
    for i in range(n):
        sid = f"student{i:03d}"
        if i < n_blank:
            nb, kind = b.release, "blank"
        elif i < n_blank + n_partial:
            nb, kind = naive, "partial"
        else:
            nb, kind = b.solution, "solution"
        folder = course / "submitted" / sid / assignment
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / b.notebook)
        kinds[sid] = kind
    return kinds


def scores(db: Path, assignment: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}", course_id="sdpa-course") as gb:
        return {s.student_id: round(float(s.score), 6) for s in gb.assignment_submissions(assignment)}


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd[:4])} ... failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assignment", default="hw2_stable_softmax")
    ap.add_argument("-n", type=int, default=None, help="number of submissions (default 40; 200 with --cluster)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of nbgrader and the class grader, interleaved")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "class_grading_speed.json")
    ap.add_argument(
        "--cluster",
        action="store_true",
        help="the cluster mode: local Dask clusters against the local pool (class_grading_cluster.py)",
    )
    ap.add_argument("--no-kernel-record", action="store_true", help="with --cluster: grade without the record run")
    args = ap.parse_args()
    if args.cluster:
        import class_grading_cluster

        args.n = args.n or 200
        return class_grading_cluster.main(args, make_submissions)
    args.n = args.n or 40
    env = scratch_course.nbgrader_env()

    with tempfile.TemporaryDirectory(prefix="class-grading-bench-") as tmp:
        course = scratch_course.make_course(Path(tmp) / "course", [args.assignment])
        scratch_course.generate(course, args.assignment)
        kinds = make_submissions(course, args.assignment, args.n)

        # Rounds of the three commands one after another: a busy spell of a shared machine then slows
        # all three of a round, and the ratios are read round by round, then as medians.
        labels = ("classgrader", "classgrader --no-kernel-record")
        runs: dict[str, list[float]] = {"nbgrader autograde": [], **{label: [] for label in labels}}
        outs = {label: Path(tmp) / label.replace(" ", "_") for label in labels}
        agree = dict.fromkeys(labels, True)
        for round_ in range(args.repeat):
            runs["nbgrader autograde"].append(
                timed([sys.executable, "-m", "nbgrader", "autograde", args.assignment, "--force"], course, env)
            )
            expected = scores(course / "gradebook.db", args.assignment)
            for label in labels:
                shutil.rmtree(outs[label], ignore_errors=True)  # a fresh gradebook and no results to reuse
                cmd = [
                    sys.executable,
                    "-m",
                    "classgrader",
                    args.assignment,
                    str(course / "submitted"),
                    "--course",
                    str(REPO),
                    "--out",
                    str(outs[label]),
                    "--workers",
                    str(args.workers),
                    "--quiet",
                    *(["--no-kernel-record"] if "no-kernel-record" in label else []),
                ]
                runs[label].append(timed(cmd, REPO, env))
                agree[label] = agree[label] and scores(outs[label] / "gradebook.db", args.assignment) == expected
            print(
                f"  round {round_ + 1}: "
                + ", ".join(f"{label} {seconds[-1]:.1f} s" for label, seconds in runs.items()),
                flush=True,
            )
        summary = json.loads((outs["classgrader"] / "reports" / args.assignment / "summary.json").read_text())
        by_kind: dict[str, set[Any]] = {}
        for sid, kind in kinds.items():
            by_kind.setdefault(kind, set()).add(expected.get(sid))

    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "assignment": args.assignment,
        "submissions": args.n,
        "kinds": {k: sum(1 for v in kinds.values() if v == k) for k in sorted(set(kinds.values()))},
        "scores_by_kind": {k: sorted(v) for k, v in by_kind.items()},
        "workers": args.workers,
        "sandbox": summary.get("sandbox"),
        "rounds": args.repeat,
        "seconds_per_round": {label: [round(t, 2) for t in seconds] for label, seconds in runs.items()},
        "nbgrader_autograde_seconds": round(statistics.median(runs["nbgrader autograde"]), 2),
        "classgrader_seconds": {label: round(statistics.median(runs[label]), 2) for label in labels},
        "speedup": {
            label: round(statistics.median(runs["nbgrader autograde"]) / statistics.median(runs[label]), 2)
            for label in labels
        },
        "speedup_per_round": {
            label: [round(n / t, 2) for n, t in zip(runs["nbgrader autograde"], runs[label])] for label in labels
        },
        "same_scores_as_nbgrader": agree,
    }
    t_nbgrader = result["nbgrader_autograde_seconds"]
    print(f"{args.n} submissions of {args.assignment} on {result['machine']}, sandbox {result['sandbox']}")
    print(f"medians of {args.repeat} round(s):")
    print(f"  nbgrader autograde (sequential)        {t_nbgrader:7.1f} s  {t_nbgrader / args.n:5.2f} s per notebook")
    for label in labels:
        t = result["classgrader_seconds"][label]
        per_round = ", ".join(f"{r:.2f}x" for r in result["speedup_per_round"][label])
        print(
            f"  {label:38s} {t:7.1f} s  {t / args.n:5.2f} s per notebook  "
            f"{t_nbgrader / t:4.2f}x faster (rounds: {per_round})  same scores: {agree[label]}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")


if __name__ == "__main__":
    main()
