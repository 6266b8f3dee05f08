"""Run a homework's release notebook as a learner would: answers filled in, top to bottom, in its folder."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
from fixtures.homework import submissions as subs
from nbclient import NotebookClient

from nbgrader_tools.scratch_course import nbgrader_env


def run_release(assignment: str, fixture: str, **env: str) -> nbformat.NotebookNode:
    """The release of ``assignment`` with the answers of the corpus fixture ``fixture`` (a file stem of
    ``tests/fixtures/homework/<assignment>/``), executed as :func:`execute_as_learner` runs it, with ``env``
    added to its environment. Returns the executed notebook."""
    _, cells = subs.parse(subs.HERE / assignment / f"{fixture}.py")
    nb = nbformat.reads(json.dumps(subs.submission(assignment, cells)), as_version=4)
    return execute_as_learner(nb, subs.REPO / "exercises" / assignment, **env)


def execute_as_learner(nb: nbformat.NotebookNode, folder: Path, **env: str) -> nbformat.NotebookNode:
    """``nb`` executed in place, top to bottom, in a fresh desktop kernel in ``folder`` (not as a grader:
    no hidden seed), every cell run even after an error, with ``env`` added to its environment."""
    kernel_env = {k: v for k, v in nbgrader_env().items() if k not in ("GRADING_HIDDEN_SEED",)}
    kernel_env.update(env)
    # The kernel is stopped at once when done, as nbgrader_config.py has nbgrader do it.
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
        allow_errors=True,
        shutdown_kernel="immediate",
    )
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(kernel_env)
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


BEFORE_SUBMIT = re.compile(
    r"^Check before you submit \((?P<name>\w+)\): (?P<got>[\d.]+) of (?P<total>[\d.]+) points", re.M
)


def before_submit_points(text: str) -> tuple[str, float, float]:
    """(assignment, points got, points in all) from what "check before you submit" printed."""
    found = BEFORE_SUBMIT.search(text)
    assert found, f"no summary line of the check before you submit in: {text[-2000:]}"
    return found["name"], float(found["got"]), float(found["total"])
