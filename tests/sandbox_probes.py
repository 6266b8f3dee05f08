"""Hostile jobs run straight in the sandbox, shared by the tests of both sandbox modes.

Each function runs its job with :func:`classgrader.sandbox.session.run` and returns
plain facts (JSON-ready), so a test can run it in its own process or, through
:mod:`ordinary_user`, as an ordinary user, and assert the same things.
"""

from __future__ import annotations

import re
import time

from classgrader import sandbox

FORKS = "\n".join(
    [
        "import os, time",
        "children = 0",
        "try:",
        "    for _ in range(1000):",
        "        if os.fork() == 0:",
        "            time.sleep(60)",
        "            os._exit(0)",
        "        children += 1",
        "except OSError as exc:",
        "    print('stopped after', children, type(exc).__name__)",
    ]
)
FLOOD = (
    "import os\nfor fd in range(3, 20):\n    try:\n        os.write(fd, b'{' * (4 * 1024 * 1024))\n"
    "    except OSError:\n        pass"
)
MAX_PROCESSES = 16


def fork_bomb_and_flood(mode: str, wall: float) -> dict:
    """A fork bomb, then a flood of result bytes, with a limit of 16 processes and a 1 MiB result cap."""
    limits = sandbox.Limits(
        wall_seconds=wall, memory_bytes=512 * 1024**2, result_bytes=1024 * 1024, max_processes=MAX_PROCESSES
    )
    job = {
        "cells": [{"n": 0, "source": FORKS, "role": "extra"}, {"n": 1, "source": FLOOD, "role": "extra"}],
        "checks": [],
    }
    outcome = sandbox.run(job, {"driver.py": sandbox.DRIVER}, limits, uid=61124, mode=mode)
    first = next((e for e in outcome.events if e.get("event") == "cell" and e.get("n") == 0), {})
    return {
        "fork_stdout": first.get("stdout", ""),
        "result_overflow": outcome.result_overflow,
        "mode": outcome.mode,
        "done": any(e.get("event") == "done" for e in outcome.events),
    }


def assert_fork_bomb_and_flood_contained(facts: dict) -> None:
    """Forking stopped below the process limit; writing past the result cap ended the run (before its wall
    time ran out, or the result would not have overflowed: how many seconds that took is the machine's business)."""
    out = facts["fork_stdout"]
    assert out.startswith("stopped after") and "BlockingIOError" in out, facts
    assert int(out.split()[2]) < MAX_PROCESSES
    assert facts["result_overflow"] and not facts["done"], facts


LINGER = "\n".join(
    [
        "import os, sys, time",
        "from pathlib import Path",
        "Path('left-by-the-scoring-run.txt').write_text('x')",
        "import builtins; builtins.SET_BY_THE_SCORING_RUN = True",
        "if os.fork() == 0:  # outlive the scoring run, and watch for lib",
        "    os.setsid()",
        "    for _ in range(100):",
        "        if os.path.exists('/grader/.run/pkgs/lib') or any(Path('/grader/.run').glob('*/lib')):",
        "            os.write(2, b'LINGERER SAW LIB')",
        "            break",
        "        time.sleep(0.05)",
        "    os._exit(0)",
    ]
)
LOOK = "\n".join(
    [
        "import builtins, os",
        "print(sorted(os.listdir('.')), hasattr(builtins, 'SET_BY_THE_SCORING_RUN'))",
        "from sdpa_course import lib; print('lib at', lib.__file__)",
    ]
)
SCORE_LOOKS_FOR_LIB = (
    "import importlib.util as u; print('lib importable:', u.find_spec('sdpa_course') is not None"
    " and u.find_spec('sdpa_course.lib') is not None)"
)


def two_runs_in_one_session(mode: str, wall: float, lib_dir: str) -> dict:
    """A scoring run that leaves a process and a file behind, then a record run handed lib: what each saw."""
    from pathlib import Path

    limits = sandbox.Limits(wall_seconds=wall, memory_bytes=512 * 1024**2)
    lib_files = {
        f"sdpa_course/lib/{p.relative_to(lib_dir).as_posix()}": p
        for p in sorted(Path(lib_dir).rglob("*.py"))
        if "__pycache__" not in p.parts
    }
    score = {
        "cells": [
            {"n": 0, "source": SCORE_LOOKS_FOR_LIB, "role": "extra"},
            {"n": 1, "source": LINGER, "role": "extra"},
        ],
        "checks": [],
    }
    record = {"mode": "record", "cells": [{"n": 0, "source": LOOK, "role": "extra"}], "checks": []}
    with sandbox.Session({}, limits, uid=61126, mode=mode) as session:
        first = session.run(score)
        time.sleep(0.3)  # time for a process left behind to look
        second = session.run(record, files=lib_files)
    cell = lambda o, n: next((e for e in o.events if e.get("event") == "cell" and e.get("n") == n), {})  # noqa: E731
    return {
        "mode": first.mode,
        "score_stdout": cell(first, 0).get("stdout", ""),
        "score_pid": next((e.get("pid") for e in first.events if e.get("event") == "start"), None),
        "record_pid": next((e.get("pid") for e in second.events if e.get("event") == "start"), None),
        "record_stdout": cell(second, 0).get("stdout", ""),
        "record_error": cell(second, 0).get("error"),
        "logs": first.log + second.log,
        "returncodes": [first.returncode, second.returncode],
    }


def assert_two_runs_share_nothing_but_the_imports(facts: dict) -> None:
    """The scoring run had no lib; the record run got lib, a fresh process, a fresh scratch folder; nothing the
    scoring run left running saw lib."""
    assert "lib importable: False" in facts["score_stdout"], facts
    assert facts["record_error"] is None, facts
    where = re.search(r"^lib at (\S+)$", facts["record_stdout"], flags=re.M)
    # bound in for the record run only
    assert where and where[1] == "/grader/.run/pkgs/sdpa_course/lib/__init__.py", facts
    assert "left-by-the-scoring-run.txt" not in facts["record_stdout"], facts  # a fresh scratch folder
    assert facts["record_stdout"].splitlines()[0].endswith("] False"), facts  # no module state carried over
    assert facts["score_pid"] != facts["record_pid"], facts
    assert "LINGERER SAW LIB" not in facts["logs"], facts
    assert facts["returncodes"] == [0, 0], facts
