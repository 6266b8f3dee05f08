"""The program that runs INSIDE the sandbox, in the learner's process.

It is started by :mod:`classgrader.sandbox` as ``python -I driver.py JOB`` and
uses only the standard library, IPython, :mod:`classgrader.records` (the job
and the events it reads and writes, copied in beside it) and whatever the
learner imports. It never sees ``lib``, ``solutions/``, the gradebook or any
other submission.

What it does, in order:

1. runs the notebook's code cells (the release's locked cells and the
   learner's own cells, as :mod:`classgrader.notebooks` arranged them), each
   with its output captured and bounded, and each stopped by an alarm when
   the cells together overrun their share of the time;
2. for every graded check, calls the check's *collector*
   (``grading.core.run_cases``, which needs no ``lib``) with the learner's
   functions and the grader's input cases, and reports the raw results as
   JSON, each check with its own share of the remaining time.

In ``"record"`` mode it only runs every cell in order, test cells included
(the nbgrader-style run kept for the record).

Everything it reports goes, one JSON object per line, to the file descriptor
that was standard output when it started; anything the learner writes to
standard output or error at the file-descriptor level goes to the sandbox's
stderr, which the grader drains and truncates. None of this is trusted by the
grader: learner code shares this process and could forge any line. That is why
the score is computed outside, from raw results on inputs the learner never saw
before this run, and why everything read back is size-bounded and parsed as
plain JSON.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

# ``python -I`` leaves the script's folder off sys.path: the job names the
# folders that hold /grader's packages (classgrader.records among them).
if __name__ == "__main__" and len(sys.argv) > 1:
    with open(sys.argv[1], encoding="utf-8") as _job_file:
        sys.path[:0] = json.load(_job_file).get("sys_path", [])

from classgrader.records import (
    CellEvent,
    CellStartEvent,
    CheckEvent,
    DoneEvent,
    Job,
    JobCell,
    ProblemEvent,
    RunStatus,
    StartEvent,
)

MAX_LINE = 4 * 1024 * 1024  # largest single event this driver writes


class SandboxTimeout(BaseException):
    """Raised by the alarm when a cell or a check overruns its time budget."""


def _on_alarm(signum, frame):  # pragma: no cover - exercised through the sandbox
    raise SandboxTimeout("time budget exceeded")


class BoundedText(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts the rest."""

    def __init__(self, cap: int):
        self.cap = cap
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, s) -> int:
        if not isinstance(s, str):
            s = str(s)
        room = self.cap - self.kept
        if room > 0:
            piece = s[:room]
            self.parts.append(piece)
            self.kept += len(piece)
            self.dropped += len(s) - len(piece)
        else:
            self.dropped += len(s)
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n... [{self.dropped} more characters of output not kept]\n"
        return text


class Reporter:
    def __init__(self, fd: int):
        self.fd = fd

    def emit(self, event: Any) -> None:
        """Write one event (a record of :mod:`classgrader.records`) as one line of JSON."""
        try:
            line = json.dumps(event, allow_nan=True)
        except (TypeError, ValueError) as exc:
            line = json.dumps(
                ProblemEvent(
                    event=event.get("event"), id=event.get("id"), n=event.get("n"), unserialisable=str(exc)[:500]
                )
            )
        if len(line) > MAX_LINE:
            line = json.dumps(
                ProblemEvent(event=event.get("event"), id=event.get("id"), n=event.get("n"), too_large=len(line))
            )
        data = (line + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]


def _short_traceback(exc: BaseException, limit_chars: int = 4000) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[:limit_chars]


def _alarm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def main(job_path: str) -> int:
    started = time.monotonic()
    # The result channel is the original stdout; learner writes to fd 1 land on fd 2.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    out = Reporter(result_fd)

    with open(job_path, encoding="utf-8") as fh:
        job: Job = json.load(fh)
    wall = float(job["wall"])
    cell_cap = int(job["cell_output_chars"])
    deadline = started + wall * 0.9
    cells_deadline = started + wall * float(job["cell_share"])
    for path in job.get("sys_path", []):
        sys.path.insert(0, path)
    os.environ.setdefault("MPLBACKEND", "Agg")
    signal.signal(signal.SIGALRM, _on_alarm)

    out.emit(StartEvent(event="start", pid=os.getpid(), uid=os.getuid()))

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(colors="NoColor")
    shell.display_formatter.active_types = ["text/plain"]

    def run_cell(cell: JobCell, until: float) -> None:
        n = cell["n"]
        out.emit(CellStartEvent(event="cell_start", n=n))
        stdout, stderr = BoundedText(cell_cap), BoundedText(cell_cap)
        old = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = stdout, stderr
        status: RunStatus = "ok"
        error, value = None, None
        t0 = time.monotonic()
        try:
            _alarm(until - time.monotonic())
            try:
                result = shell.run_cell(cell["source"], store_history=False, silent=False)
            finally:
                _disarm()
            if type(result.result) in (int, float):  # a cell's value: nbgrader's partial credit
                value = result.result
            exc = result.error_before_exec or result.error_in_exec
            if exc is not None:
                error = _short_traceback(exc)
                if isinstance(exc, SandboxTimeout):
                    status = "timeout"
                elif isinstance(exc, MemoryError):
                    status = "memory"
                else:
                    status = "error"
        except SandboxTimeout as exc:
            status, error = "timeout", _short_traceback(exc)
        except MemoryError as exc:
            status, error = "memory", "MemoryError"
        finally:
            sys.stdout, sys.stderr = old
        out.emit(
            CellEvent(
                event="cell",
                n=n,
                role=cell.get("role"),
                status=status,
                error=error,
                stdout=stdout.getvalue(),
                stderr=stderr.getvalue(),
                value=value,
                seconds=round(time.monotonic() - t0, 3),
            )
        )

    if job.get("mode") == "record":
        # As nbgrader would run it: every cell in order, test cells in place,
        # the hidden checks on the learner's seed (grading.seeds.hidden_seed).
        if job.get("hidden_seed") is not None:
            os.environ["GRADING_HIDDEN_SEED"] = str(int(job["hidden_seed"]))
        for cell in job["cells"]:
            run_cell(cell, deadline)
        out.emit(DoneEvent(event="done", seconds=round(time.monotonic() - started, 3)))
        return 0

    # 1. the notebook's own code, in order
    for cell in job["cells"]:
        if cell.get("role") != "test":
            run_cell(cell, cells_deadline)

    # 2. the graded checks: learner functions on the grader's inputs
    checks = job["checks"]
    for i, check in enumerate(checks):
        left = len(checks) - i
        budget = max((deadline - time.monotonic()) / left, 0.05)
        status: RunStatus = "ok"
        results, error = None, None
        stdout, stderr = BoundedText(cell_cap), BoundedText(cell_cap)
        old = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = stdout, stderr
        try:
            module_name, attr = check["collector"].split(":")
            collector = getattr(importlib.import_module(module_name), attr)
            functions = {name: shell.user_ns[name] for name in check["functions"] if name in shell.user_ns}
            _alarm(budget)
            try:
                results = collector(functions, check["cases"])
            finally:
                _disarm()
            # Plain JSON only: an object that pretends to be a number fails here.
            json.dumps(results, allow_nan=True)
        except SandboxTimeout as exc:
            status, results, error = "timeout", None, _short_traceback(exc)
        except MemoryError:
            status, results, error = "memory", None, "MemoryError"
        except BaseException as exc:  # the learner's code may raise anything
            status, results, error = "error", None, _short_traceback(exc)
        finally:
            sys.stdout, sys.stderr = old
        out.emit(CheckEvent(event="check", id=check["id"], status=status, results=results, error=error))

    out.emit(DoneEvent(event="done", seconds=round(time.monotonic() - started, 3)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
