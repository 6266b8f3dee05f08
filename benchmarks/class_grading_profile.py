"""Where a submission's grading time goes: ``./course grade``'s stages, timed, as a table.

It grades the speed benchmark's class (``class_grading_speed.py``: of every 8
submissions of hw2, 6 correct, 1 blank, 1 partly right) with the class
grader's own pipeline (``grade_class``), with one worker by default so that
the stages of one submission do not overlap another's, and times:

* in each sandboxed run (the scoring run, then the nbgrader-style record run,
  both in one sandbox: see ``classgrader.sandbox.session.Session``):
  **sandbox start** (scoring run: from the spawn to the driver's first line:
  prlimit, bwrap's namespaces and mounts, the interpreter's start-up,
  importing IPython and numpy once; record run: from handing over its job,
  with ``lib``, to its forked process's first line), **shell** (making
  IPython's shell), **first cell** (the release's setup cell: the homework's
  helpers; numpy is already imported), **other cells**
  (the learner's answers; in the record run also the test cells, which import
  ``lib`` and ``grading`` and run the hidden tests), **checks** (grading's
  collector calling the learner's functions; scoring run only) and **exit**
  (from the last line to the grader knowing that the run's process has
  ended). The
  driver stamps each line it writes with the host's monotonic clock;
* in the grader's process: **match** (read the notebook, line it up with the
  release), **compare** (score with ``lib``), **record** (the result and the
  autograded notebook), **report** (the feedback page), **save** (write them,
  atomically) and the **gradebook** transaction (in the main thread, while the
  worker grades the next submission).

Run it from the repository root (as root for the root-mode sandbox, else
the user-namespace one):

    .venv/bin/python benchmarks/class_grading_profile.py [-n 16] [--workers 1] [--sandbox auto]

It prints the table and writes ``benchmarks/results/class_grading_profile.json``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import functools
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from class_grading_speed import make_submissions  # noqa: E402

RUN_STAGES = ("sandbox start", "shell", "first cell", "other cells", "checks", "exit")
GRADER_STAGES = ("match", "compare", "record", "report", "save", "gradebook")


class Profile:
    """Seconds per stage, summed over submissions, from any thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        with self.lock:
            self.seconds[stage] += max(seconds, 0.0)

    def timed(self, stage: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(stage, time.monotonic() - start)

        return wrapper

    def sandbox_run(self, fn: Callable) -> Callable:
        """Wrap ``sandbox.Session.run``: split each run into its stages by the clocks of the driver's lines."""

        @functools.wraps(fn)
        def wrapper(session: Any, job: dict, *args: Any, **kwargs: Any) -> Any:
            outcome = fn(session, job, *args, **kwargs)
            ended = time.monotonic()
            run = "record run" if job.get("mode") == "record" else "score run"
            for stage, seconds in split_run(outcome.events, outcome.started, ended).items():
                self.add(f"{run}: {stage}", seconds)
            self.add(f"{run}: count", 1)
            return outcome

        return wrapper


def split_run(events: list[dict], spawned: float, ended: float) -> dict[str, float]:
    """Seconds of each of RUN_STAGES in one sandboxed run, from the clocks its events carry."""
    clocks = [(e.get("event"), float(e["clock"])) for e in events if isinstance(e.get("clock"), (int, float))]
    marks = {"spawn": spawned}
    for name, clock in clocks:
        if name == "start":
            marks.setdefault("start", clock)
        elif name == "cell_start":
            marks.setdefault("first cell starts", clock)
        elif name == "cell":
            marks.setdefault("first cell ends", clock)
            marks["cells end"] = clock
        elif name == "check":
            marks["checks end"] = clock
        marks["last line"] = clock
    order = ["spawn", "start", "first cell starts", "first cell ends", "cells end", "checks end", "last line"]
    known = [(m, marks[m]) for m in order if m in marks] + [("end", ended)]
    stage_of = {
        "start": "sandbox start",
        "first cell starts": "shell",
        "first cell ends": "first cell",
        "cells end": "other cells",
        "checks end": "checks",
        "last line": "exit",
        "end": "exit",
    }
    out = dict.fromkeys(RUN_STAGES, 0.0)
    for (_, before), (mark, after) in zip(known, known[1:]):
        out[stage_of[mark]] += after - before
    return out


@contextlib.contextmanager
def instrumented(profile: Profile) -> Iterator[None]:
    """The class grader with a timer around each stage (put back afterwards)."""
    import nbformat

    from classgrader import sandbox
    from classgrader.books import gradebook
    from classgrader.pipeline import outputs
    from classgrader.stages import grade

    patches = [
        (grade, "match", profile.timed("match", grade.match)),
        (grade, "compare", profile.timed("compare", grade.compare)),
        (grade, "record", profile.timed("record", grade.record)),
        (grade, "render", profile.timed("report", grade.render)),
        (sandbox.Session, "run", profile.sandbox_run(sandbox.Session.run)),
        (nbformat, "writes", profile.timed("save", nbformat.writes)),
        (outputs, "write_text_atomic", profile.timed("save", outputs.write_text_atomic)),
        (outputs, "write_json_atomic", profile.timed("save", outputs.write_json_atomic)),
        (gradebook.Writer, "write", profile.timed("gradebook", gradebook.Writer.write)),
    ]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    for obj, name, new in patches:
        setattr(obj, name, new)
    try:
        yield
    finally:
        for obj, name, old in saved:
            setattr(obj, name, old)


def table(profile: Profile, n: int, wall: float, workers: int) -> tuple[str, list[dict]]:
    rows: list[dict[str, Any]] = []
    for run in ("score run", "record run"):
        for stage in RUN_STAGES:
            key = f"{run}: {stage}"
            if key in profile.seconds:
                rows.append({"stage": key, "seconds": profile.seconds[key]})
    for stage in GRADER_STAGES:
        label = (
            "grader: gradebook (main thread, overlaps the next submission)"
            if stage == "gradebook"
            else f"grader: {stage}"
        )
        rows.append({"stage": label, "seconds": profile.seconds.get(stage, 0.0)})
    lines = [f"{'stage':62s} {'ms per submission':>18s} {'share':>7s}"]
    for row in rows:
        row["ms_per_submission"] = round(1000 * row["seconds"] / n, 1)
        row["share_of_wall"] = round(row["seconds"] / (wall * workers), 3)
        lines.append(f"{row['stage']:62s} {row['ms_per_submission']:18.1f} {100 * row['share_of_wall']:6.1f}%")
    timed = sum(r["seconds"] for r in rows if "overlaps" not in r["stage"])
    lines.append(
        f"{'sum of the stages above (without the gradebook)':62s} {1000 * timed / n:18.1f} "
        f"{100 * timed / (wall * workers):6.1f}%"
    )
    lines.append(f"{'wall time per submission x workers':62s} {1000 * wall * workers / n:18.1f} {100:6.1f}%")
    return "\n".join(lines), rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assignment", default="hw2_stable_softmax")
    ap.add_argument("-n", type=int, default=16, help="number of submissions (default 16)")
    ap.add_argument("--workers", type=int, default=1, help="parallel workers (default 1: stages do not overlap)")
    ap.add_argument("--sandbox", default="auto", choices=("auto", "root", "userns"))
    ap.add_argument("--no-kernel-record", action="store_true", help="skip the nbgrader-style record run")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "class_grading_profile.json")
    args = ap.parse_args()

    from classgrader.pipeline.class_run import grade_class
    from classgrader.stages.grade import Settings

    profile = Profile()
    with tempfile.TemporaryDirectory(prefix="class-grading-profile-") as tmp:
        course = Path(tmp) / "course"
        make_submissions(course, args.assignment, args.n)
        settings = Settings(sandbox_mode=args.sandbox, kernel_record=not args.no_kernel_record)
        with instrumented(profile):
            started = time.monotonic()
            summary = grade_class(
                REPO,
                args.assignment,
                course / "submitted",
                out=Path(tmp) / "out",
                workers=args.workers,
                settings=settings,
                progress=False,
                analyse=False,
                log=lambda msg: None,
            )
            wall = time.monotonic() - started
    text, rows = table(profile, args.n, wall, args.workers)
    header = (
        f"{args.n} submissions of {args.assignment}, {args.workers} worker(s), sandbox {summary.get('sandbox')}"
        f"{', no record run' if args.no_kernel_record else ''}: {wall:.1f} s, "
        f"{1000 * wall / args.n:.0f} ms per submission; statuses {summary['statuses']}"
    )
    print(header)
    print(text)
    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_1min": round(os.getloadavg()[0], 2),
        "assignment": args.assignment,
        "submissions": args.n,
        "workers": args.workers,
        "sandbox": summary.get("sandbox"),
        "kernel_record": not args.no_kernel_record,
        "wall_seconds": round(wall, 2),
        "stages": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")


if __name__ == "__main__":
    main()
