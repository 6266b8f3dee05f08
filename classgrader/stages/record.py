"""Stage 4 of grading one submission: the record of what happened.

From the plan, the runs and the scores, :func:`record` makes the
:class:`~classgrader.records.Result` (one status, the notes that explain it,
nbgrader's comments for answers left blank, the late penalty) and the
autograded notebook: the release's cells with the learner's answers and the
bounded outputs of the run, so that nbgrader's own tools can read it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat

from classgrader import sandbox
from classgrader.after_deadline import late
from classgrader.assignments.course import AssignmentInfo
from classgrader.pipeline.intake import Submission
from classgrader.records import (
    CellEvent,
    CellResult,
    CheckEvent,
    Result,
    RunFailure,
    SandboxSummary,
    Status,
    new_result,
)
from classgrader.stages import notebooks
from classgrader.stages.match import Matched
from classgrader.stages.sandbox_run import Runs
from classgrader.stages.scoring import Scores, Verdict
from nbgrader_tools.cells import SELF_CHECK_ID

_NO_PLAN_MESSAGES = {"missing": "nothing submitted", "not_a_notebook": "the submission is not a notebook"}


def record(
    info: AssignmentInfo,
    sub: Submission,
    matched: Matched,
    runs: Runs | None,
    scores: Scores | None,
    limits: sandbox.Limits,
    policy: late.Policy | None = None,
) -> tuple[Result, nbformat.NotebookNode | None]:
    """The result of one submission and its autograded notebook (None when nothing ran).

    ``runs`` and ``scores`` are None when the submission had no plan (missing,
    not a notebook). With a ``policy``, the result carries its late penalty.
    """
    result = new_result(
        student=sub.student,
        assignment=info.name,
        notebook=Path(info.notebook).stem,
        display_name=sub.display_name,
        timestamp=sub.timestamp,
        submitted_file=sub.original_name,
        layout=sub.layout,
        ignored_files=sub.ignored,
        max_score=info.max_score,
        key=matched.key,
        status=matched.status or "graded",
    )
    if matched.sha256 is not None:
        result["sha256"] = matched.sha256
    nb = None
    if matched.plan is None or runs is None or scores is None:
        if matched.reason:
            result["notes"].append(matched.reason)
        message = _NO_PLAN_MESSAGES.get(result["status"], "not graded")
        result["cells"] = {
            gid: CellResult(score=0.0, points=pts, message=message) for gid, pts in info.grade_cells.items()
        }
    else:
        plan = matched.plan
        status = status_of(sub, plan, runs.failure)
        result.update(
            {
                "repairs": plan.repairs,
                "seed": runs.seed,
                "sandbox": sandbox_summary(runs.outcome),
                "cells": scores.cells,
                "score": scores.score,
                "comments": comments(info, plan),
                "in_kernel": runs.in_kernel,
                "flagged": scores.flagged,
                "status": status,
                "cell_seconds": {str(n): e.get("seconds") for n, e in runs.cells.items()},
            }
        )
        result["notes"] = [
            f"cell {gid!r} has no check in grading; left for manual grading" for gid in scores.unchecked
        ] + status_notes(status, plan, runs.outcome, runs.cells, runs.checks, limits)
        if scores.flagged:
            result["notes"].append(
                "on the same inputs, the in-kernel tests gave more points than the outside comparison for "
                + ", ".join(scores.flagged)
                + ": the notebook's code changed the checks in its own process "
                "(evidence of tampering); scored by the comparison"
            )
        nb = notebooks.autograded_notebook(
            plan, info.release, outputs(plan, runs.cells, scores.verdicts, scores.cells, limits)
        )
    if policy is not None:
        late.annotate(result, sub, policy)
    return result, nb


def status_of(sub: Submission, plan: notebooks.Plan, failure: RunFailure | None) -> Status:
    """The submission's one status: how the run failed, else what the matching repaired, else graded."""
    if failure is not None:
        return failure
    if plan.metadata_stripped:
        return "metadata_stripped"
    if plan.repairs:
        return "test_cells_changed"
    if sub.renamed:
        return "renamed"
    return "graded"


def comments(info: AssignmentInfo, plan: notebooks.Plan) -> dict[str, str | None]:
    """Comments for answer cells, as nbgrader's autograder writes them: "No response." for a blank one."""
    out: dict[str, str | None] = {}
    for pc in plan.cells:
        if pc.grade_id and pc.role in ("answer", "missing_answer", "markdown") and pc.release_index is not None:
            if notebooks.release_role(info.release.cells[pc.release_index]) == "answer":
                template = info.release.cells[pc.release_index].source
                unchanged = notebooks.normalise_source(pc.source) == notebooks.normalise_source(template)
                out[pc.grade_id] = "No response." if (pc.role == "missing_answer" or unchanged) else None
    return out


def sandbox_summary(o: sandbox.RunOutcome) -> SandboxSummary:
    return SandboxSummary(
        returncode=o.returncode,
        signal=o.signal,
        timed_out=o.timed_out,
        result_overflow=o.result_overflow,
        seconds=o.seconds,
        log=o.log[-4000:],
        events=len(o.events),
        mode=o.mode,
    )


def _where(plan: notebooks.Plan, n: Any) -> str:
    if not isinstance(n, int) or not 0 <= n < len(plan.cells):
        return "a cell"
    pc = plan.cells[n]
    kind = {"answer": "answer cell", "extra": "cell", "setup": "setup cell", "test": "test cell"}.get(pc.role, "cell")
    return f"{kind} {n + 1}" + (f" ({pc.grade_id})" if pc.grade_id else "")


def status_notes(
    status: str,
    plan: notebooks.Plan,
    o: sandbox.RunOutcome,
    cells: dict[Any, CellEvent],
    checks: dict[str, CheckEvent],
    limits: sandbox.Limits,
) -> list[str]:
    """Sentences that say where the run failed, or what the matching repaired."""
    notes = []
    if status == "timed_out":
        for n, e in cells.items():
            if e.get("status") == "timeout":
                notes.append(
                    f"{_where(plan, n)} was stopped at its time budget (it ran too long: often a loop that never "
                    "ends); the checks after it still ran"
                )
        for cid, ce in checks.items():
            if ce.get("status") == "timeout":
                notes.append(
                    f"check {cid} was stopped at its time budget and scores 0: the function it calls did not "
                    "return in time (often a loop that never ends)"
                )
        if o.timed_out:
            notes.append(f"the notebook was stopped at the wall-time limit of {limits.wall_seconds:g} s")
    elif status == "out_of_memory":
        mib = limits.memory_bytes // 2**20
        for n, e in cells.items():
            if e.get("status") == "memory":
                notes.append(f"{_where(plan, n)} ran out of memory (limit {mib} MiB)")
        for cid, ce in checks.items():
            if ce.get("status") == "memory":
                notes.append(f"check {cid} ran out of memory (limit {mib} MiB) and scores 0")
        if not notes:
            notes.append(f"the notebook was killed at the memory limit of {mib} MiB")
    elif status == "kernel_died":
        started = [e.get("n") for e in o.events if e.get("event") == "cell_start"]
        last = started[-1] if started else None
        how = (
            f"exit status {o.returncode}"
            if o.returncode is not None and o.returncode < 128
            else f"signal {o.returncode - 128}"
            if o.returncode
            else "no exit status"
        )
        where = f" during {_where(plan, last)}" if last is not None and last not in cells else ""
        notes.append(
            f"the notebook's process ended ({how}){where} before grading finished; checks that had not run score 0"
        )
        if o.result_overflow:
            notes.append(f"it wrote more than {limits.result_bytes} bytes of results and was stopped")
    elif status == "metadata_stripped":
        notes.append("the notebook had lost nbgrader's cell metadata; its cells were matched to the release")
    for details in plan.repairs.values():
        notes.extend(details)
    return notes


def outputs(
    plan: notebooks.Plan,
    cells: dict[Any, CellEvent],
    verdicts: dict[str, Verdict],
    scored: dict[str, CellResult] | None = None,
    limits: sandbox.Limits | None = None,
) -> dict[int, list[dict[str, Any]]]:
    """Bounded text outputs per plan cell, for the autograded notebook and the feedback."""
    out: dict[int, list[dict[str, Any]]] = {}
    for n, pc in enumerate(plan.cells):
        if pc.role == "test":
            v = verdicts.get(pc.grade_id) if pc.grade_id else None
            if v is None:
                continue
            out[n] = [notebooks.stream_output("stdout", _verdict_line(v, (scored or {}).get(pc.grade_id or "")))]
            continue
        if pc.grade_id == SELF_CHECK_ID:
            out[n] = [notebooks.stream_output("stdout", SELF_CHECK_NOT_RUN)]
            continue
        e = cells.get(n)
        if e is None:
            continue
        outs = []
        for name, text in (("stdout", e.get("stdout")), ("stderr", e.get("stderr"))):
            if isinstance(text, str) and e.get("status") == "timeout":
                text = _without_timeout_traceback(text)  # the message below says it in words
            if isinstance(text, str) and text:
                outs.append(notebooks.stream_output(name, _strip_ansi(text)))
        if e.get("status") == "timeout":
            outs.append(notebooks.error_output("Stopped", cell_timeout_text(_where(plan, n), limits)))
        elif e.get("status") in ("error", "memory") and e.get("error"):
            ename, _, evalue = str(e["error"]).partition(":")
            outs.append(notebooks.error_output(ename.strip()[:100], evalue.strip()[:2000]))
        out[n] = outs
    return out


#: What the feedback shows under the "check before you submit" cell, which grading does not run.
SELF_CHECK_NOT_RUN = (
    "Check before you submit: not run while grading. It is for you, before you submit; "
    "the graded test cells above ran instead.\n"
)


def cell_timeout_text(where: str, limits: sandbox.Limits | None) -> str:
    """What a cell stopped at its time budget means, in the learner's terms."""
    budget = f" (the notebook's cells share {limits.wall_seconds * limits.cell_share:g} s)" if limits else ""
    return (
        f"{where} was still running when its time ran out{budget}, so the grader stopped it. "
        "This usually means a loop that never ends (a while loop whose condition stays true, "
        "or a loop that changes the wrong variable), or work far larger than the exercise needs. "
        "Run the cell yourself: it should finish in a second or two. If it does not, interrupt it "
        "(Kernel, Interrupt) and look at its loops. The graded tests after it still ran."
    )


def _verdict_line(v: Verdict, cell: CellResult | None) -> str:
    """The test cell's output: passed, partly right or FAILED, with the points, and the check's message."""
    if v.passed and (cell is None or cell.get("score") == cell.get("points")):
        return f"passed: {v.message}\n"
    if cell is not None and cell.get("score") is not None:
        score, points = float(cell["score"] or 0), float(cell.get("points") or 0)
        word = "partly right" if score > 0 else "FAILED"
        return f"{word}, {score:g} of {points:g} points: {v.message}\n"
    return ("partly right: " if v.fraction > 0 else "FAILED: ") + v.message + "\n"


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: IPython's traceback of the grader's own alarm (classgrader.sandbox.driver.SandboxTimeout), from its rule line on.
_TIMEOUT_TRACEBACK = re.compile(
    r"^(?:\x1b\[[0-9;]*m)*-{10,}(?:\x1b\[[0-9;]*m)*\s*\n(?=(?:\x1b\[[0-9;]*m)*SandboxTimeout)", re.M
)


def _without_timeout_traceback(text: str) -> str:
    """A stopped cell's output up to IPython's traceback of the grader's alarm."""
    text = _TIMEOUT_TRACEBACK.split(text, maxsplit=1)[0]
    at = text.find("SandboxTimeout")
    return text if at < 0 else text[: text.rfind("\n", 0, at) + 1]


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)
