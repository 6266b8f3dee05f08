"""How long a developer waits: ``./course test`` from a fresh clone, then a rebuild with nothing changed.

Clones this repository at a commit (HEAD by default) into a new temporary
folder and runs ``./course test`` there as ``.ci/run`` does (``CI`` set, no
grading secret), timing its phases from the command's own output: setting up
(the virtual environment and the web assets, until jupyter-book starts), lint
and the book's build (they run side by side), then the tests. ``--repeat N``
runs the same command N times in that clone (the later runs find the book
built: their pytest part is what differs) and reports the median of the pytest
parts. It then runs ``./course build`` again ``--rebuilds`` times, nothing
having changed, and times each. ``--fast`` times ``./course test --fast``
instead; ``--burners N`` keeps N CPU-bound processes running beside every
test run (a machine busy with other work), stopped afterwards. Run from the
repository root::

    .venv/bin/python benchmarks/course_test_time.py [--commit HEAD] [--baseline COMMIT] [--rebuilds 3]
        [--repeat 2] [--fast] [--burners 2]

With ``--baseline COMMIT`` that commit is measured the same way first, in its
own clone, so that both runs see the same machine on the same day (one after
the other: a run takes all the cores). pip and npm use the machine's download
caches, as on a developer's machine after the first install. A clone is
removed once measured (``--keep`` keeps it). The full output of each
``./course test`` is written beside the results (``<out>.<label>.log``, not
committed). It prints each phase as it ends and writes
``benchmarks/results/course_test_time.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "course_test_time.json"

# Lines of ./course test's output that end a phase, in order: the phase's name and
# a pattern for the line that starts the next one.
MARKERS = (
    ("setup", re.compile(r"^Running Jupyter-Book")),
    ("lint_and_build", re.compile(r"test session starts")),
)
PYTEST_SUMMARY = re.compile(r"^=+ (?P<counts>.*?) in (?P<seconds>[\d.]+)s")


def processor() -> str:
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def clone(commit: str, into: Path) -> str:
    """A fresh clone of this repository at ``commit``; returns the commit's full hash."""
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "--quiet", commit], check=True)
    return subprocess.run(
        ["git", "-C", str(into), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def ci_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_GRADING_SECRET", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env["CI"] = "true"
    # Each line reaches the pipe as it is printed, so that it is timed then.
    env["PYTHONUNBUFFERED"] = "1"
    return env


@contextlib.contextmanager
def burners(n: int) -> Iterator[None]:
    """``n`` processes that keep a core busy each, for as long as the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def cpu_times() -> list[int]:
    """The machine's CPU time so far, all cores (/proc/stat: user nice system idle iowait irq softirq steal)."""
    return [int(v) for v in Path("/proc/stat").read_text(encoding="utf-8").split("\n", 1)[0].split()[1:9]]


def cpu_shares(before: list[int], after: list[int]) -> dict[str, float]:
    """How the cores spent the time between two readings: idle (and waiting for disks), stolen by
    the host, busy (this run's work and anything beside it, burners included)."""
    d = [b - a for a, b in zip(before, after)]
    total = sum(d) or 1
    idle, steal = d[3] + d[4], d[7]
    return {
        "busy": round((total - idle - steal) / total, 3),
        "idle": round(idle / total, 3),
        "steal": round(steal / total, 3),
    }


def timed_test_run(checkout: Path, log_path: Path, label: str, command: list[str]) -> dict[str, Any]:
    """Run ``command`` (``./course test ...``) in ``checkout``; the phases' seconds from its output."""
    phases: dict[str, float] = {}
    summaries: list[dict[str, Any]] = []
    start = last = time.perf_counter()
    pending = list(MARKERS)
    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            command,
            cwd=checkout,
            env=ci_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            now = time.perf_counter()
            if pending and pending[0][1].search(line):
                name = pending.pop(0)[0]
                phases[name] = round(now - last, 1)
                last = now
                print(f"{label}: {name} {phases[name]:.1f} s", flush=True)
                if not pending:
                    tests_started = cpu_times()
            found = PYTEST_SUMMARY.match(line)
            if found:
                summaries.append({"counts": found["counts"], "seconds": float(found["seconds"])})
        code = proc.wait()
    end = time.perf_counter()
    shares = {}
    if not pending:
        phases["tests"] = round(end - last, 1)
        shares = cpu_shares(tests_started, cpu_times())
        print(f"{label}: tests {phases['tests']:.1f} s; the cores' time: {shares}", flush=True)
    total = round(end - start, 1)
    counts = "; ".join(s["counts"] for s in summaries) or "no pytest summary"
    print(f"{label}: {' '.join(command)} exited {code} after {total:.1f} s ({counts})")
    return {
        "phases_s": phases,
        "tests_cpu_shares": shares,
        "total_s": total,
        "exit_code": code,
        "pytest_sessions": summaries,
    }


def pytest_seconds(run: dict[str, Any]) -> float:
    return sum(s["seconds"] for s in run["pytest_sessions"])


def timed_rebuilds(checkout: Path, n: int, label: str) -> list[float]:
    seconds = []
    for i in range(n):
        start = time.perf_counter()
        subprocess.run(
            ["./course", "build"], cwd=checkout, env=ci_environment(), check=True, capture_output=True, text=True
        )
        seconds.append(round(time.perf_counter() - start, 2))
        print(f"{label}: rebuild {i + 1}: {seconds[-1]:.2f} s", flush=True)
    return seconds


def measure(commit: str, label: str, out: Path, args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    where = Path(tempfile.mkdtemp(prefix=f"course-{label}-"))
    # mkdtemp makes a folder only its owner may enter; the sandbox tests run the
    # clone's Python as an ordinary user, who must reach it as in any clone.
    where.chmod(0o755)
    try:
        full = clone(commit, where / "course")
        print(f"{label}: {full[:12]} cloned into {where / 'course'}", flush=True)
        run: dict[str, Any] = {
            "label": label,
            "commit": full,
            "command": " ".join(command),
            "burners": args.burners,
            "load_average_1min_before": round(os.getloadavg()[0], 2),
        }
        with burners(args.burners):
            run |= timed_test_run(where / "course", out.with_suffix(f".{label}.log"), label, command)
            again = [
                timed_test_run(where / "course", out.with_suffix(f".{label}.{i + 2}.log"), f"{label} {i + 2}", command)
                for i in range(args.repeat - 1)
                if run["exit_code"] == 0
            ]
        run["repeats"] = again
        run["exit_code"] = max([run["exit_code"], *(r["exit_code"] for r in again)])
        run["pytest_s"] = [pytest_seconds(r) for r in (run, *again)]
        run["pytest_median_s"] = statistics.median(run["pytest_s"])
        print(f"{label}: pytest {run['pytest_s']} s, median {run['pytest_median_s']:.1f} s", flush=True)
        run["rebuilds_s"] = timed_rebuilds(where / "course", args.rebuilds, label) if run["exit_code"] == 0 else []
        return run
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--commit", default="HEAD", help="the commit to measure (default HEAD)")
    parser.add_argument("--baseline", help="another commit, measured the same way first")
    parser.add_argument("--rebuilds", type=int, default=3, help="rebuilds with nothing changed, after the tests")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--note", default="", help="what the commits are, for the benchmark page")
    parser.add_argument("--keep", action="store_true", help="keep the clones")
    parser.add_argument("--repeat", type=int, default=1, help="test runs per clone; the median of their pytest parts")
    parser.add_argument("--fast", action="store_true", help="time ./course test --fast")
    parser.add_argument("--burners", type=int, default=0, help="CPU-bound processes running beside the tests")
    parser.add_argument("--label", default="measured", help="the run's name on the benchmark page")
    parser.add_argument(
        "--append", action="store_true", help="keep the runs already in --out (one of the same label is replaced)"
    )
    args = parser.parse_args(argv)
    for name in ("rebuilds", "burners"):
        if getattr(args, name) < 0:
            parser.error(f"--{name} must be 0 or more, not {getattr(args, name)}")
    if args.repeat < 1:
        parser.error(f"--repeat must be 1 or more, not {args.repeat}")
    command = ["./course", "test", *(["--fast"] if args.fast else [])]
    for commit in filter(None, (args.baseline, args.commit)):
        check = ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"]
        if subprocess.run(check, capture_output=True).returncode != 0:
            parser.error(f"{commit!r} is not a commit of this repository")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    runs = []
    if args.baseline:
        runs.append(measure(args.baseline, "baseline", args.out, args, command))
    runs.append(measure(args.commit, args.label, args.out, args, command))
    if args.append and args.out.exists():
        kept = json.loads(args.out.read_text(encoding="utf-8"))
        labels = {run["label"] for run in runs}
        runs = [run for run in kept["runs"] if run["label"] not in labels] + runs
        args.note = args.note or kept.get("note", "")
    result = {
        "note": args.note,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{processor()}, {os.cpu_count()} cores",
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if all(run["exit_code"] == 0 for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
