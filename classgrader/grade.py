"""Grade one submission: match, run in the sandbox, compare outside, record.

The score of every graded cell comes from :mod:`grading`'s comparison,
computed here, in the grader's process, with ``lib``, from plain JSON results
that the learner's functions produced in the sandbox. The visible checks use
their fixed inputs; the hidden checks use inputs made from the learner's own
seed, ``grading.seeds.student_seed(course, assignment, student)`` (an HMAC of
the course secret, which never enters the sandbox): the same file always gets
the same score. Nothing the learner's code does in its own process can reach
this computation.

A second, optional sandbox run executes the notebook the way ``nbgrader
autograde`` would (every cell in order, the instructor's test cells with their
hidden tests, ``lib`` available, the same seed) *for the record only*. Both
runs see the same inputs, so an honest notebook scores the same in both; when
the in-kernel score is higher than the outside comparison's, that is evidence
of tampering (the learner's code changed the checks in its own process) and
the cell is flagged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import nbformat

from . import notebooks, sandbox
from .intake import Submission

GRADER_VERSION = "1"
COLLECTOR = "grading.run:run_cases"

# One status per submission, the most serious first.
STATUSES = {
    "missing": "missing: nothing was submitted",
    "not_a_notebook": "not a notebook: the file could not be read as a notebook",
    "timed_out": "timed out: the wall-time limit stopped a cell or a check",
    "out_of_memory": "out of memory: the memory limit stopped a cell or a check",
    "kernel_died": "kernel died: the learner's process ended before grading finished",
    "metadata_stripped": "nbgrader metadata stripped: cells recovered by matching them to the release",
    "test_cells_changed": "test cells edited, duplicated or deleted: the release's test cells were used",
    "renamed": "notebook renamed: matched to the assignment",
    "graded": "graded",
}


@dataclasses.dataclass
class Settings:
    limits: sandbox.Limits = dataclasses.field(default_factory=sandbox.Limits)
    sandboxed: bool = True
    kernel_record: bool = True
    uid_base: int = 61000


@dataclasses.dataclass
class AssignmentInfo:
    name: str
    notebook: str  # file name, e.g. hw2_stable_softmax.ipynb
    release: nbformat.NotebookNode
    source: nbformat.NotebookNode
    release_dir: Path
    source_dir: Path  # the folder holding solutions/<assignment>
    checks: list  # grading Check objects
    grade_cells: dict[str, float]  # grade_id -> points, in notebook order
    key: str  # changes when the release, the checks, the course secret or this grader change
    grading_dir: Path
    lib_dir: Path
    secret: bytes = b""
    secret_source: str = ""

    @property
    def max_score(self) -> float:
        return float(sum(self.grade_cells.values()))


class SetupError(RuntimeError):
    """The assignment cannot be graded as configured; the message says why."""


def load_assignment(course: Path, name: str) -> AssignmentInfo:
    """Read the release, the instructor source and the checks of one assignment."""
    import grading
    import lib

    release_dir = course / "exercises" / name
    source_dir = course / "solutions" / name
    for folder, what in ((release_dir, "release (student version)"), (source_dir, "instructor source")):
        if not folder.is_dir():
            raise SetupError(f"no {what} for {name!r}: {folder} does not exist")
    release_nbs = sorted(release_dir.glob("*.ipynb"))
    if len(release_nbs) != 1:
        raise SetupError(f"{release_dir} must hold exactly one notebook; it holds {len(release_nbs)}")
    nb_name = release_nbs[0].name
    if not (source_dir / nb_name).is_file():
        raise SetupError(f"{source_dir / nb_name} is missing (the instructor source of {nb_name})")
    release = nbformat.read(release_nbs[0], as_version=4)
    source = nbformat.read(source_dir / nb_name, as_version=4)
    try:
        checks = grading.checks_for(name)
    except KeyError as exc:
        raise SetupError(str(exc)) from None
    grade_cells = {}
    for cell in release.cells:
        meta = notebooks.nbgrader_meta(cell)
        if meta.get("grade") and meta.get("grade_id"):
            grade_cells[meta["grade_id"]] = float(meta.get("points", 0) or 0)
    from grading import seeds

    try:
        secret, secret_source = seeds.course_secret(course)
    except seeds.SecretMissing as exc:
        raise SetupError(str(exc)) from None
    digest = hashlib.sha256()
    digest.update(GRADER_VERSION.encode())
    digest.update(hashlib.sha256(secret).digest())
    digest.update(release_nbs[0].read_bytes())
    # What decides this assignment's scores: its checks, their shared code, and lib.
    gdir = Path(grading.__file__).parent
    module = getattr(grading, "ASSIGNMENTS", {}).get(name)
    own = [Path(module.__file__)] if module is not None else sorted(gdir.glob("hw*.py"))
    shared = [p for p in sorted(gdir.glob("*.py")) if not p.name.startswith("hw")]
    for path in [*shared, *own, *sorted(Path(lib.__file__).parent.rglob("*.py"))]:
        digest.update(path.name.encode() + path.read_bytes())
    return AssignmentInfo(
        name=name, notebook=nb_name, release=release, source=source, release_dir=release_dir,
        source_dir=course / "solutions", checks=checks, grade_cells=grade_cells,
        key=digest.hexdigest()[:16], grading_dir=Path(grading.__file__).parent,
        lib_dir=Path(lib.__file__).parent, secret=secret, secret_source=secret_source,
    )


def submission_key(info: AssignmentInfo, data: bytes | None) -> str:
    h = hashlib.sha256(data or b"").hexdigest()[:24]
    return f"{h}-{info.key}"


# --------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------


def grade(info: AssignmentInfo, sub: Submission, settings: Settings, *, slot: int = 0,
          registry: sandbox.Registry | None = None) -> tuple[dict, nbformat.NotebookNode | None]:
    """Grade one submission; returns (result, autograded notebook or None)."""
    result: dict[str, Any] = {
        "student": sub.student, "assignment": info.name, "notebook": Path(info.notebook).stem,
        "display_name": sub.display_name, "timestamp": sub.timestamp,
        "submitted_file": sub.original_name, "layout": sub.layout, "ignored_files": sub.ignored,
        "max_score": info.max_score, "score": 0.0, "cells": {}, "comments": {},
        "notes": [], "repairs": {}, "flagged": [], "in_kernel": {}, "sandbox": {},
    }
    if sub.path is None:
        result.update(status="missing", key=submission_key(info, None))
        result["cells"] = {gid: {"score": 0.0, "points": pts, "message": "nothing submitted"}
                           for gid, pts in info.grade_cells.items()}
        return result, None
    data = sub.path.read_bytes()
    result["key"] = submission_key(info, data)
    result["sha256"] = hashlib.sha256(data).hexdigest()
    try:
        learner = notebooks.load(data, sub.original_name or sub.path.name)
    except notebooks.NotANotebook as exc:
        result.update(status="not_a_notebook")
        result["notes"].append(str(exc))
        result["cells"] = {gid: {"score": 0.0, "points": pts, "message": "the submission is not a notebook"}
                           for gid, pts in info.grade_cells.items()}
        return result, None

    plan = notebooks.match(learner, info.release)
    result["repairs"] = plan.repairs
    from grading import seeds

    seed = seeds.seed_for(info.secret, info.name, sub.student)
    result["seed"] = seed
    # Visible checks: their fixed inputs, as in the notebook; hidden: the learner's seed.
    cases = {c.id: c.make_cases(seed if c.hidden else None) for c in info.checks}

    job = {
        "mode": "score",
        "cells": [c for c in plan.code_cells() if c["role"] != "test"],
        "checks": [{"id": c.id, "functions": list(c.functions), "collector": COLLECTOR, "cases": cases[c.id]}
                   for c in info.checks],
    }
    # The grading package goes in (its setup cells import it; its runner
    # collects the results), lib does not: the reference is not there to call.
    grader_files = {"driver.py": sandbox.DRIVER, **_package_files("grading", info.grading_dir)}
    uid = settings.uid_base + slot
    outcome = sandbox.run(job, grader_files, settings.limits, uid=uid, extra_files=sub.extra_files,
                          sandboxed=settings.sandboxed, registry=registry)
    result["sandbox"] = _describe(outcome)
    start = next((e for e in outcome.events if e.get("event") == "start"), None)
    if settings.sandboxed and start is not None and start.get("uid") == 0:
        raise sandbox.SandboxUnavailable("a sandbox ran as root; refusing to grade with it")
    cell_events = {e.get("n"): e for e in outcome.events if e.get("event") == "cell"}
    check_events: dict[str, dict] = {}
    for e in outcome.events:
        if e.get("event") == "check" and isinstance(e.get("id"), str) and e["id"] not in check_events:
            check_events[e["id"]] = e

    # The score: grading's comparison, here, with lib, on plain results.
    verdicts = {}
    for check in info.checks:
        event = check_events.get(check.id)
        if event is None:
            verdicts[check.id] = (False, 0.0, "not run: the notebook's process ended before this check")
            continue
        if event.get("status") != "ok":
            verdicts[check.id] = (False, 0.0, f"could not run: {event.get('error') or event.get('status')}")
            continue
        try:
            verdict = check.compare(cases[check.id], event.get("results"))
            verdicts[check.id] = (bool(verdict.passed), check.score(verdict) / check.points if check.points
                                  else float(verdict.passed), str(verdict.message))
        except Exception as exc:  # malformed results must not stop the batch
            verdicts[check.id] = (False, 0.0, f"the results could not be compared ({type(exc).__name__})")
    for gid, points in info.grade_cells.items():
        if gid in verdicts:
            passed, fraction, message = verdicts[gid]
            fraction = min(max(fraction, 0.0), 1.0)
            result["cells"][gid] = {"points": points, "score": round(points * fraction, 2),
                                    "passed": passed, "message": message}
        else:
            result["cells"][gid] = {"points": points, "score": None, "passed": None,
                                    "message": "no outside check for this cell: grade it by hand"}
            result["notes"].append(f"cell {gid!r} has no check in grading; left for manual grading")
    result["score"] = round(sum(c["score"] or 0.0 for c in result["cells"].values()), 6)

    # Comments for answer cells, as nbgrader's autograder writes them.
    for pc in plan.cells:
        if pc.grade_id and pc.role in ("answer", "missing_answer", "markdown") and pc.release_index is not None:
            if notebooks.release_role(info.release.cells[pc.release_index]) == "answer":
                template = info.release.cells[pc.release_index].source
                unchanged = notebooks.normalise_source(pc.source) == notebooks.normalise_source(template)
                result["comments"][pc.grade_id] = "No response." if (pc.role == "missing_answer" or unchanged) else None

    # For the record: the notebook run as nbgrader would run it.
    status = _status(sub, plan, outcome, cell_events, check_events)
    if settings.kernel_record and status not in ("timed_out", "out_of_memory", "kernel_died"):
        result["in_kernel"] = _kernel_record(info, plan, settings, uid, sub, registry, seed)
        for gid, cell in result["cells"].items():
            kernel_score = _kernel_score(result["in_kernel"].get(gid), cell["points"])
            if kernel_score is not None and cell["score"] is not None and kernel_score > cell["score"] + 0.01:
                result["flagged"].append(gid)

    result["status"] = status
    result["notes"] += _status_notes(status, plan, outcome, cell_events, check_events, settings.limits)
    result["cell_seconds"] = {str(n): e.get("seconds") for n, e in cell_events.items()}
    outputs = _outputs(plan, cell_events, verdicts, outcome)
    nb = notebooks.autograded_notebook(plan, info.release, outputs)
    if result["flagged"]:
        result["notes"].append(
            "on the same inputs, the in-kernel tests gave more points than the outside comparison for "
            + ", ".join(result["flagged"]) + ": the notebook's code changed the checks in its own process "
            "(evidence of tampering); scored by the comparison")
    return result, nb


def _describe(o: sandbox.RunOutcome) -> dict:
    return {"returncode": o.returncode, "signal": o.signal, "timed_out": o.timed_out,
            "result_overflow": o.result_overflow, "seconds": o.seconds,
            "log": o.log[-4000:], "events": len(o.events)}


def _status(sub: Submission, plan: notebooks.Plan, o: sandbox.RunOutcome,
            cells: dict, checks: dict) -> str:
    statuses = [e.get("status") for e in list(cells.values()) + list(checks.values())]
    done = any(e.get("event") == "done" for e in o.events)
    if o.timed_out or "timeout" in statuses:
        return "timed_out"
    # bwrap reports a child killed by signal N as exit status 128 + N.
    killed = o.returncode - 128 if o.returncode and o.returncode > 128 else None
    if "memory" in statuses or killed == 9:
        return "out_of_memory"
    if killed == 24:  # SIGXCPU: the CPU-seconds limit
        return "timed_out"
    if not done or o.result_overflow or o.signal is not None:
        return "kernel_died"
    if plan.metadata_stripped:
        return "metadata_stripped"
    if plan.repairs:
        return "test_cells_changed"
    if sub.renamed:
        return "renamed"
    return "graded"


def _where(plan: notebooks.Plan, n) -> str:
    if not isinstance(n, int) or not 0 <= n < len(plan.cells):
        return "a cell"
    pc = plan.cells[n]
    kind = {"answer": "answer cell", "extra": "cell", "setup": "setup cell", "test": "test cell"}.get(pc.role, "cell")
    return f"{kind} {n + 1}" + (f" ({pc.grade_id})" if pc.grade_id else "")


def _status_notes(status: str, plan: notebooks.Plan, o: sandbox.RunOutcome, cells: dict, checks: dict,
                  limits: sandbox.Limits) -> list[str]:
    notes = []
    if status == "timed_out":
        for n, e in cells.items():
            if e.get("status") == "timeout":
                notes.append(f"{_where(plan, n)} was stopped at its time budget; the checks after it still ran")
        for cid, e in checks.items():
            if e.get("status") == "timeout":
                notes.append(f"check {cid} was stopped at its time budget and scores 0")
        if o.timed_out:
            notes.append(f"the notebook was stopped at the wall-time limit of {limits.wall_seconds:g} s")
    elif status == "out_of_memory":
        mib = limits.memory_bytes // 2**20
        for n, e in cells.items():
            if e.get("status") == "memory":
                notes.append(f"{_where(plan, n)} ran out of memory (limit {mib} MiB)")
        for cid, e in checks.items():
            if e.get("status") == "memory":
                notes.append(f"check {cid} ran out of memory (limit {mib} MiB) and scores 0")
        if not notes:
            notes.append(f"the notebook was killed at the memory limit of {mib} MiB")
    elif status == "kernel_died":
        started = [e.get("n") for e in o.events if e.get("event") == "cell_start"]
        last = started[-1] if started else None
        how = (f"exit status {o.returncode}" if o.returncode is not None and o.returncode < 128
               else f"signal {o.returncode - 128}" if o.returncode else "no exit status")
        where = f" during {_where(plan, last)}" if last is not None and last not in cells else ""
        notes.append(f"the notebook's process ended ({how}){where} before grading finished; "
                     "checks that had not run score 0")
        if o.result_overflow:
            notes.append(f"it wrote more than {limits.result_bytes} bytes of results and was stopped")
    elif status == "metadata_stripped":
        notes.append("the notebook had lost nbgrader's cell metadata; its cells were matched to the release")
    for kind, details in plan.repairs.items():
        notes.extend(details)
    return notes


def _outputs(plan: notebooks.Plan, cells: dict, verdicts: dict, o: sandbox.RunOutcome) -> dict[int, list[dict]]:
    """Bounded text outputs per plan cell, for the autograded notebook and the feedback."""
    outputs: dict[int, list[dict]] = {}
    for n, pc in enumerate(plan.cells):
        if pc.role == "test":
            v = verdicts.get(pc.grade_id)
            if v is None:
                continue
            passed, _, message = v
            text = ("passed: " if passed else "FAILED: ") + message + "\n"
            outputs[n] = [notebooks.stream_output("stdout", text)]
            continue
        e = cells.get(n)
        if e is None:
            continue
        outs = []
        for name in ("stdout", "stderr"):
            text = e.get(name)
            if isinstance(text, str) and text:
                outs.append(notebooks.stream_output(name, _strip_ansi(text)))
        if e.get("status") in ("error", "timeout", "memory") and e.get("error"):
            ename, _, evalue = str(e["error"]).partition(":")
            outs.append(notebooks.error_output(ename.strip()[:100], evalue.strip()[:2000]))
        outputs[n] = outs
    return outputs


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _kernel_score(record: str | None, points: float) -> float | None:
    """The points an in-kernel record gave a cell ("passed", "failed", "partial 1.5")."""
    if record == "passed":
        return float(points)
    if record == "failed":
        return 0.0
    if isinstance(record, str) and record.startswith("partial "):
        try:
            return min(max(float(record.split()[1]), 0.0), float(points))
        except ValueError:
            return None
    return None


def _kernel_record(info: AssignmentInfo, plan: notebooks.Plan, settings: Settings, uid: int,
                   sub: Submission, registry, seed: int) -> dict[str, str]:
    """Run the cells in order with the instructor's test cells (hidden tests
    included, on the learner's seed) and ``lib`` available, as nbgrader would;
    per test cell "passed", "failed", "partial <score>" (a number as the
    cell's value, nbgrader's partial credit) or "not run"."""
    source_tests = {}
    for cell in info.source.cells:
        meta = notebooks.nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution") and meta.get("grade_id"):
            source_tests[meta["grade_id"]] = cell.source
    cells = []
    for c in plan.code_cells():
        if c["role"] == "test":
            c = dict(c, source=source_tests.get(c["grade_id"], c["source"]))
        cells.append(c)
    job = {"mode": "record", "cells": cells, "checks": [], "hidden_seed": int(seed)}
    files: dict[str, Path] = {"driver.py": sandbox.DRIVER, **_package_files("grading", info.grading_dir),
                              **_package_files("lib", info.lib_dir)}
    outcome = sandbox.run(job, files, settings.limits, uid=uid, extra_files=sub.extra_files,
                          sandboxed=settings.sandboxed, registry=registry)
    by_n = {e.get("n"): e for e in outcome.events if e.get("event") == "cell"}
    record = {}
    for c in cells:
        if c["role"] == "test" and c.get("grade_id"):
            e = by_n.get(c["n"])
            if e is None:
                record[c["grade_id"]] = "not run"
            elif e.get("status") == "ok" and not e.get("stderr") and isinstance(e.get("value"), (int, float)) \
                    and not isinstance(e.get("value"), bool):
                record[c["grade_id"]] = f"partial {float(e['value']):g}"
            elif e.get("status") == "ok" and not e.get("stderr"):
                record[c["grade_id"]] = "passed"
            else:
                record[c["grade_id"]] = "failed"
    return record


def _package_files(name: str, folder: Path) -> dict[str, Path]:
    """Every .py file of a package, keyed by its path inside the sandbox's /grader."""
    return {f"{name}/{p.relative_to(folder).as_posix()}": p for p in sorted(folder.rglob("*.py"))
            if "__pycache__" not in p.parts}


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True, default=str)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
