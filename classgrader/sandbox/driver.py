"""The program that runs INSIDE the sandbox, in the learner's process.

It is started by :mod:`classgrader.sandbox.session` (see "serving" below; ``python
-I driver.py JOB`` runs one job file alone) and uses only the standard
library, IPython and whatever the learner imports. It never sees
``solutions/``, the gradebook or any other submission, nor ``lib`` in the
scoring run. The
job it reads and the events it writes are defined in
:mod:`classgrader.records`; it imports them for the type checker only, and
writes them as the plain dicts they are.

What it does, in order:

1. runs the notebook's code cells (the release's locked cells and the
   learner's own cells, as :mod:`classgrader.stages.notebooks` arranged them), each
   with its output captured and bounded, and each stopped by an alarm when
   the cells together overrun their share of the time;
2. for every graded check, calls the check's *collector*
   (``grading.run.run_cases``, which needs no ``lib``) with the learner's
   functions and the grader's input cases, and reports the raw results as
   JSON, each check with its own share of the remaining time.

In ``"record"`` mode it only runs every cell in order, test cells included
(the nbgrader-style run kept for the record).

Serving: it is started once per submission, as ``python -I driver.py --serve JOBS
CONTROL_FD [--pid-namespace]`` (:class:`classgrader.sandbox.session.Session`), and
first imports what every run imports (IPython's shell, numpy), before any
learner code exists. Then, for each job file named on its standard input
(the scoring run, then the record run), it forks a fresh process that runs
that one job and ends; it waits for it, ends whatever that process left
running (inside its own PID namespace only), reports how it ended on
``CONTROL_FD``, a pipe that no job's process holds, and empties the scratch
folder of all but the submission's own files. The two runs of one learner
share the imports and nothing else: each has its own process and a scratch
folder as it was handed in, and the next job is only read once the one
before has ended. No learner's code ever runs in the serving process itself.

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

import gc
import importlib
import io
import json
import os
import signal
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:  # not at run time: the driver runs alone, with the standard library and IPython
    from types import FrameType

    from classgrader.records import (
        CellEvent,
        CellStartEvent,
        CheckEvent,
        DoneEvent,
        Event,
        ExitEvent,
        FilesEvent,
        Job,
        JobCell,
        JobCheck,
        ProblemEvent,
        RunStatus,
        StartEvent,
    )

MAX_LINE = 4 * 1024 * 1024  # largest single event this driver writes


class SandboxTimeout(BaseException):
    """Raised by the alarm when a cell or a check overruns its time budget."""


def _on_alarm(signum: int, frame: FrameType | None) -> NoReturn:  # pragma: no cover - exercised through the sandbox
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

    def write(self, s: object) -> int:
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

    def emit(self, event: Event) -> None:
        """Write one event (a record of :mod:`classgrader.records`) as one line of JSON, with its ``clock``."""
        fields: dict[str, Any] = dict(event)
        problem: ProblemEvent
        try:
            line = json.dumps({**event, "clock": time.monotonic()}, allow_nan=True)
        except (TypeError, ValueError) as exc:
            problem = {
                "event": fields.get("event"),
                "id": fields.get("id"),
                "n": fields.get("n"),
                "unserialisable": str(exc)[:500],
            }
            line = json.dumps(problem)
        if len(line) > MAX_LINE:
            problem = {
                "event": fields.get("event"),
                "id": fields.get("id"),
                "n": fields.get("n"),
                "too_large": len(line),
            }
            line = json.dumps(problem)
        data = (line + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]


def _forget_error(shell: Any) -> None:
    """Drop the references a failed cell leaves behind (its traceback holds the cell's frames).

    Otherwise what a cell allocated before it failed (say, memory up to the
    limit) stays alive in ``sys.last_traceback`` and the shell's last result,
    and the cells and checks after it fail for want of memory they would have.
    """
    sys.last_type = sys.last_value = sys.last_traceback = None
    if hasattr(sys, "last_exc"):
        sys.last_exc = None
    shell.last_execution_result = None
    gc.collect()  # an exception and its frames form a cycle: only the collector frees it


def _short_traceback(exc: BaseException, limit_chars: int = 4000) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text[:limit_chars]


def _plain_text(shell: Any, value: object, cap: int) -> str | None:
    """The cell value's ``text/plain`` form, as a kernel's execute_result carries it (nbgrader reads its
    partial credit there), or None when it cannot be formatted."""
    try:
        data, _ = shell.display_formatter.format(value)
        text = data.get("text/plain")
    except Exception:
        return None
    return text[:cap] if isinstance(text, str) else None


def _alarm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def serve(jobs: str, control_fd: int, pid_namespace: bool) -> int:
    """Import once, then run each job named on stdin in its own forked process (see the module docstring)."""
    import numpy  # noqa: F401  (every notebook's setup cell imports it)
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401

    global SUBMITTED
    control = Reporter(control_fd)
    submitted = set(os.listdir("."))  # the scratch folder holds the submission's own files, and nothing else yet
    SUBMITTED = frozenset(submitted)
    for line in sys.stdin:
        name = os.path.basename(line.strip())
        if not name:
            continue
        pid = os.fork()
        if pid == 0:  # the job's own process: no control channel, no stdin
            code = 70
            try:
                os.close(control_fd)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.close(null)
                sys.stdin = open(os.devnull, encoding="utf-8")
                code = main(os.path.join(jobs, name))
            finally:
                _end(code)
        _, status = os.waitpid(pid, 0)
        if pid_namespace:  # whatever the job's process left running (its own namespace: nothing else is in it)
            try:
                os.kill(-1, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        ended: ExitEvent = {"event": "exit", "job": name, "exitcode": os.waitstatus_to_exitcode(status)}
        control.emit(ended)
        _clear_scratch(submitted)  # the next job starts from the folder as it was handed in
    return 0


#: The working folder's files as handed in (set by :func:`serve` before any job runs).
SUBMITTED: frozenset[str] = frozenset()
#: At most this much of the files the cells wrote is sent back (the event stream has its own cap).
FILES_CAP = 1024**2


def _written_files() -> FilesEvent:
    """The regular files at the top of the working folder that the cells wrote, up to :data:`FILES_CAP` bytes."""
    import base64

    event: FilesEvent = {"event": "files", "files": {}, "left_out": []}
    room = FILES_CAP
    for entry in sorted(os.scandir("."), key=lambda e: e.name):
        if entry.name in SUBMITTED or not entry.is_file(follow_symlinks=False):
            continue
        size = entry.stat(follow_symlinks=False).st_size
        if size > room:
            event["left_out"].append(entry.name)
            continue
        try:
            with open(entry.path, "rb") as fh:
                data = fh.read(size)
        except OSError:
            event["left_out"].append(entry.name)
            continue
        room -= len(data)
        event["files"][entry.name] = base64.b64encode(data).decode("ascii")
    return event


def _clear_scratch(keep: set[str]) -> None:
    """Remove what a job's process wrote into the scratch folder (the working directory), all but ``keep``."""
    import shutil
    import stat

    def force(function: Any, path: str, excinfo: Any) -> None:  # a folder the learner made read-only
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        function(path)

    for entry in os.scandir("."):
        if entry.name in keep:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, stat.S_IRWXU)
                shutil.rmtree(entry.path, onerror=force)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def main(job_path: str) -> int:
    """Run the job in ``job_path`` in this process, reporting each step as an event (see the module docstring)."""
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

    start: StartEvent = {"event": "start", "pid": os.getpid(), "uid": os.getuid()}
    out.emit(start)

    # Only the nbgrader-style run needs a value's text/plain form.
    cells = CellRunner(out, cell_cap, record_mode=job.get("mode") == "record")
    if job.get("mode") == "record":
        _record_run(job, cells, deadline)
        if job.get("keep_files"):
            out.emit(_written_files())
    else:
        _score_run(job, cells, cells_deadline, deadline)
    out.emit(_done(started))
    return 0


def _record_run(job: Job, cells: CellRunner, deadline: float) -> None:
    """As nbgrader would run the notebook: every cell in order, test cells in place,
    the hidden checks on the learner's seed (grading.seeds.hidden_seed)."""
    if job.get("hidden_seed") is not None:
        os.environ["GRADING_HIDDEN_SEED"] = str(int(job["hidden_seed"]))
    for cell in job["cells"]:
        cells.run(cell, deadline)


def _score_run(job: Job, cells: CellRunner, cells_deadline: float, deadline: float) -> None:
    """The notebook's own code, then the graded checks, each check with its share of the time left."""
    # 1. the notebook's own code, in order
    for cell in job["cells"]:
        if cell.get("role") != "test":
            cells.run(cell, cells_deadline)

    # 2. the graded checks: learner functions on the grader's inputs
    checks = job["checks"]
    for i, check in enumerate(checks):
        left = len(checks) - i
        budget = max((deadline - time.monotonic()) / left, 0.05)
        cells.out.emit(_run_check(cells.shell, check, budget, cells.cap))


class CellRunner:
    """Runs code cells one by one in one IPython shell, each under an alarm, and reports each as it ends."""

    def __init__(self, out: Reporter, cap: int, record_mode: bool):
        from IPython.core.interactiveshell import InteractiveShell

        self.out = out
        self.cap = cap  # characters of output kept per stream and cell
        self.record_mode = record_mode
        self.shell = InteractiveShell.instance(colors="NoColor")
        if self.shell.display_formatter is not None:
            self.shell.display_formatter.active_types = ["text/plain"]

    def run(self, cell: JobCell, until: float) -> None:
        """Run ``cell``, stopped at the monotonic time ``until``, and report it."""
        if self._run_and_report(cell, until) != "ok":
            _forget_error(self.shell)  # here, once the cell's own frame (holding its result) has gone

    def _run_and_report(self, cell: JobCell, until: float) -> RunStatus:
        shell = self.shell
        n = cell["n"]
        cell_start: CellStartEvent = {"event": "cell_start", "n": n}
        self.out.emit(cell_start)
        stdout, stderr = BoundedText(self.cap), BoundedText(self.cap)
        old = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = stdout, stderr
        status: RunStatus = "ok"
        error, value, display = None, None, None
        t0 = time.monotonic()
        try:
            _alarm(until - time.monotonic())
            try:
                result = shell.run_cell(cell["source"], store_history=False, silent=False)
            finally:
                _disarm()
            if type(result.result) in (int, float):  # a cell's value: nbgrader's partial credit
                value = result.result
            if result.result is not None and self.record_mode:  # it runs the value's __repr__: under the same alarm
                _alarm(until - time.monotonic())
                try:
                    display = _plain_text(shell, result.result, self.cap)
                finally:
                    _disarm()
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
        except MemoryError:
            status, error = "memory", "MemoryError"
        finally:
            sys.stdout, sys.stderr = old
        ran: CellEvent = {
            "event": "cell",
            "n": n,
            "role": cell.get("role"),
            "status": status,
            "error": error,
            "stdout": stdout.getvalue(),
            "stderr": stderr.getvalue(),
            "value": value,
            "display": display,
            "seconds": round(time.monotonic() - t0, 3),
        }
        self.out.emit(ran)
        return status


def _run_check(shell: Any, check: JobCheck, budget: float, cap: int) -> CheckEvent:
    """One check: its collector calls the learner's functions on the grader's cases, within ``budget`` seconds."""
    status: RunStatus = "ok"
    results, error = None, None
    stdout, stderr = BoundedText(cap), BoundedText(cap)
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
    return {
        "event": "check",
        "id": check["id"],
        "status": status,
        "results": results,
        "error": error,
    }


def _done(started: float) -> DoneEvent:
    return {"event": "done", "seconds": round(time.monotonic() - started, 3)}


def _end(code: int) -> None:
    """End now, without the interpreter's slow clean-up (IPython's, numpy's, the learner's atexit
    handlers), which can change nothing the grader reads: everything is reported."""
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        _end(serve(sys.argv[2], int(sys.argv[3]), "--pid-namespace" in sys.argv[4:]))
    _end(main(sys.argv[1]))
