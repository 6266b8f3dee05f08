"""Hostile jobs run straight in the sandbox, shared by the tests of both sandbox modes.

Each function runs its job with :func:`classgrader.sandbox.run` and returns
plain facts (JSON-ready), so a test can run it in its own process or, through
:mod:`ordinary_user`, as an ordinary user, and assert the same things.
"""

from __future__ import annotations

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
    started = time.monotonic()
    outcome = sandbox.run(job, {"driver.py": sandbox.DRIVER}, limits, uid=61124, mode=mode)
    first = next((e for e in outcome.events if e.get("event") == "cell" and e.get("n") == 0), {})
    return {
        "seconds": time.monotonic() - started,
        "fork_stdout": first.get("stdout", ""),
        "result_overflow": outcome.result_overflow,
        "mode": outcome.mode,
        "done": any(e.get("event") == "done" for e in outcome.events),
    }


def assert_fork_bomb_and_flood_contained(facts: dict, wall: float) -> None:
    """Forking stopped below the process limit; writing past the result cap ended the run, within the wall time."""
    assert facts["seconds"] < wall, facts
    out = facts["fork_stdout"]
    assert out.startswith("stopped after") and "BlockingIOError" in out, facts
    assert int(out.split()[2]) < MAX_PROCESSES
    assert facts["result_overflow"] and not facts["done"], facts
