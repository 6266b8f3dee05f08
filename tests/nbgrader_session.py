"""nbgrader's commands run one after another in one Python process, as nbgrader's own tests run them.

Each ``nbgrader`` command line starts Python and imports nbgrader (about 1.5 s of
CPU); a term's round trip runs a few dozen. :class:`NbgraderSession` starts
``python -m nbgrader_tools serve`` (:func:`nbgrader_tools.scratch_course.serve`)
once and sends it each command with the folder it runs in and the variables it
adds to the environment (a learner's ``HOME``): the same commands, arguments and
folders as on the command line, with nbgrader's application initialised, started
and reset for each, the way nbgrader's tests (``nbgrader/tests/apps``) run it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nbgrader_tools.scratch_course import REPO, SERVE_DONE


class NbgraderSession:
    """One ``python -m nbgrader_tools serve`` process; :meth:`run` a command in it."""

    def __init__(self, env: dict[str, str]):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nbgrader_tools", "serve"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def run(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
        """``nbgrader ARGS`` in ``cwd``: its exit code and what it wrote."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"args": args, "cwd": str(cwd), "env": env or {}}) + "\n")
        self.process.stdin.flush()
        lines = []
        for line in self.process.stdout:
            if line.startswith(SERVE_DONE):
                return int(line[len(SERVE_DONE) :]), "".join(lines)
            lines.append(line)
        raise RuntimeError(f"nbgrader's process ended ({self.process.wait()}) during {args}:\n{''.join(lines)}")

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
