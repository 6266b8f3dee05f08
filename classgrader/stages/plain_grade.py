"""The stages of grading one submission of a plain nbgrader assignment (:mod:`classgrader.assignments.plain_nbgrader`).

:class:`PlainStages` are the five stages of :class:`classgrader.stages.grade.Stages`
for this kind, taken notebook by notebook: its cells
are lined up with the release (:func:`classgrader.stages.notebooks.match`: test cells
edited, duplicated or deleted are reported and replaced), it runs in a
sandbox of its own (:class:`classgrader.sandbox.session.Session`, as nbgrader gives
each notebook a kernel of its own) with every test
cell as nbgrader's ``generate_assignment`` recorded it in the gradebook
(:mod:`classgrader.books.nbgrader_record`: hidden tests back in place, autotests expanded) and the
release's data files beside it. Each test cell is then scored by nbgrader's
own :func:`nbgrader.utils.determine_grade` on the outputs the cell produced,
so the score is ``nbgrader autograde``'s: 0 when the cell raised or wrote to
standard error, its value when it ends in a number (partial credit), else its
points. A manually graded answer scores 0 when left as released, and is
otherwise left for the formgrader. The assignment's score is the sum over its
notebooks; each notebook gets its autograded copy and its feedback page.
"""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path
from typing import Any, cast

import nbformat
from nbgrader.utils import determine_grade

from classgrader import sandbox
from classgrader.after_deadline import late
from classgrader.assignments.course import AssignmentInfo, submission_key
from classgrader.assignments.plain_nbgrader import MANUAL, PlainKind, PlainNotebook
from classgrader.pipeline.intake import Submission
from classgrader.records import (
    STATUSES,
    CellEvent,
    CellResult,
    FilesEvent,
    Job,
    JobCell,
    Result,
    Status,
    new_result,
)
from classgrader.sandbox.driver import FILES_CAP
from classgrader.stages import notebooks, report
from classgrader.stages.graded import Graded
from classgrader.stages.record import cell_timeout_text, comments, outputs, sandbox_summary, status_notes, status_of
from classgrader.stages.sandbox_run import Settings, job_cells, package_files, run_failure
from nbgrader_tools.cells import nbgrader_meta


@dataclasses.dataclass
class Notebook:
    """One notebook of one submission as graded."""

    spec: PlainNotebook
    path: Path | None  # the learner's file; None: not submitted
    plan: notebooks.Plan | None = None
    reason: str = ""  # why it could not be read
    events: dict[Any, CellEvent] = dataclasses.field(default_factory=dict)
    outcome: sandbox.RunOutcome | None = None
    status: Status = "graded"
    cells: dict[str, CellResult] = dataclasses.field(default_factory=dict)
    written: dict[str, bytes] = dataclasses.field(default_factory=dict)  # the files its cells wrote
    left_out: list[str] = dataclasses.field(default_factory=list)  # written, but over the size kept
    autograded: nbformat.NotebookNode | None = None  # as run, with each test cell's verdict


def _kind(info: AssignmentInfo) -> PlainKind:
    assert isinstance(info.kind, PlainKind), f"{info.name} is not a plain nbgrader assignment"
    return info.kind


def submitted_notebooks(info: AssignmentInfo, sub: Submission) -> dict[str, Path | None]:
    """Each release notebook's file in the submission: by its name beside the chosen file; the chosen file
    itself, renamed, for the first notebook found under no name of the release's."""
    specs = _kind(info).notebooks
    if sub.path is None:
        return {nb.name: None for nb in specs}
    if len(specs) == 1:
        return {specs[0].name: sub.path}
    found: dict[str, Path | None] = {}
    for nb in specs:
        candidate = sub.path.parent / nb.name
        found[nb.name] = candidate if candidate.is_file() else None
    if sub.path.name not in found:
        empty = next((name for name, path in found.items() if path is None), None)
        if empty is not None:
            found[empty] = sub.path
    return found


class PlainStages:
    """A plain assignment's stages; the state is the submission's notebooks, each a :class:`Notebook`."""

    def match(self, info: AssignmentInfo, sub: Submission) -> list[Notebook]:
        specs = _kind(info).notebooks
        parts = [Notebook(spec, path) for spec, path in zip(specs, submitted_notebooks(info, sub).values())]
        for part in parts:
            _match(part)
        return parts

    def run(
        self,
        info: AssignmentInfo,
        sub: Submission,
        state: list[Notebook],
        settings: Settings,
        *,
        slot: int,
        registry: sandbox.Registry | None,
    ) -> None:
        if any(p.plan is not None for p in state):
            _run(info, sub, state, settings, slot=slot, registry=registry)

    def compare(self, info: AssignmentInfo, sub: Submission, state: list[Notebook], settings: Settings) -> None:
        for part in state:
            _score(part, settings.limits, renamed=sub.renamed if len(state) == 1 else None)

    def record(
        self,
        info: AssignmentInfo,
        sub: Submission,
        state: list[Notebook],
        settings: Settings,
        policy: late.Policy | None,
    ) -> Result:
        data = None if sub.path is None else info.kind.submitted_bytes(sub.path)
        result = _result(info, sub, state, submission_key(info, data), settings.limits)
        if policy is not None:
            late.annotate(result, sub, policy)
        for part in state:
            part.autograded = _autograded(part, settings.limits)
        return result

    def report(self, info: AssignmentInfo, state: list[Notebook], result: Result) -> Graded:
        pages = {
            p.spec.stem: (p.autograded, report.render(result, p.autograded, base_url=info.book_url, stem=p.spec.stem))
            for p in state
        }
        first_nb, first_page = pages[state[0].spec.stem]
        kept = set(_kind(info).data_files) | {p.spec.name for p in state}
        written = {name: data for part in state for name, data in part.written.items() if name not in kept}
        return Graded(result, first_nb, first_page, pages=pages, files=written)


def _autograded(part: Notebook, limits: sandbox.Limits) -> nbformat.NotebookNode | None:
    """The notebook as run, each test cell followed by its verdict; None when it did not run."""
    if part.plan is None:
        return None
    outs = outputs(part.plan, part.events, {}, None, limits)
    for n, pc in enumerate(part.plan.cells):
        if pc.role == "test" and pc.grade_id in part.cells:
            outs.setdefault(n, []).append(
                notebooks.stream_output("stdout", report.cell_verdict(part.cells[pc.grade_id]) + "\n")
            )
    return notebooks.autograded_notebook(part.plan, part.spec.release, outs)


def _match(part: Notebook) -> None:
    if part.path is None:
        part.status = "missing"
        return
    try:
        learner = notebooks.load(part.path.read_bytes(), part.path.name)
    except notebooks.NotANotebook as exc:
        part.status, part.reason = "not_a_notebook", str(exc)
        return
    part.plan = notebooks.match(learner, part.spec.release)


def _run(
    info: AssignmentInfo,
    sub: Submission,
    parts: list[Notebook],
    settings: Settings,
    *,
    slot: int,
    registry: sandbox.Registry | None,
) -> None:
    """Run each readable notebook, test cells in the instructor's version, each in a sandbox of its own
    (as nbgrader gives each notebook its own kernel: one that overruns its time costs the others nothing)."""
    for part in parts:
        if part.plan is None:
            continue
        cells = []
        for c in job_cells(part.plan):
            if c["role"] == "test":
                c = JobCell(n=c["n"], source=part.spec.tests[c["grade_id"] or ""], role="test", grade_id=c["grade_id"])
            cells.append(c)
        with sandbox.Session(
            package_files("sdpa_course/lib", info.lib_dir),
            settings.limits,
            uid=settings.uid_base + slot,
            # The instructor's data files win over the learner's copies of them.
            extra_files={**sub.extra_files, **_kind(info).data_files},
            sandboxed=settings.sandboxed,
            registry=registry,
            mode=settings.sandbox_mode,
        ) as session:
            part.outcome = session.run(Job(mode="record", cells=cells, checks=[], keep_files=True))
        start = next((e for e in part.outcome.events if e.get("event") == "start"), None)
        if settings.sandboxed and start is not None and start.get("uid") == 0:
            raise sandbox.SandboxUnavailable("a sandbox ran as root; refusing to grade with it")
        part.events = {e.get("n"): cast(CellEvent, e) for e in part.outcome.events if e.get("event") == "cell"}
        for e in part.outcome.events:
            if e.get("event") == "files":
                files = cast(FilesEvent, e)
                part.written = {name: base64.b64decode(data) for name, data in files["files"].items()}
                part.left_out = list(files["left_out"])


def _score(part: Notebook, limits: sandbox.Limits, *, renamed: bool | None) -> None:
    """Each graded cell's score, as nbgrader's ``determine_grade`` gives it; the notebook's status."""
    spec = part.spec
    if part.plan is None:
        why = "not submitted" if part.status == "missing" else "the submission is not a notebook"
        part.cells = {gid: CellResult(points=p, score=0.0, message=why) for gid, p in spec.grade_cells.items()}
        return
    failure = run_failure(part.outcome, part.events, {}) if part.outcome is not None else "kernel_died"
    by_id = {pc.grade_id: n for n, pc in enumerate(part.plan.cells) if pc.grade_id}
    release = {nbgrader_meta(c).get("grade_id"): c for c in spec.release.cells}
    for gid, points in spec.grade_cells.items():
        n = by_id.get(gid)
        cell = nbformat.from_dict(release[gid])
        if gid in spec.manual:
            pc = part.plan.cells[n] if n is not None else None
            cell.source = pc.source if pc is not None and pc.role != "missing_answer" else ""
            score, _ = determine_grade(cell) if pc is not None and pc.role != "missing_answer" else (None, points)
            message = "left as released: no answer" if score == 0 else MANUAL
            part.cells[gid] = CellResult(
                points=points, score=None if score is None else float(score), passed=None, message=message
            )
            continue
        event = part.events.get(n) if n is not None else None
        part.cells[gid] = _test_score(cell, event, points, limits, part, n)
    if renamed is None:  # one of several notebooks: renamed when not under its release name
        renamed = part.path is not None and part.path.name != part.spec.name
    part.status = status_of(Submission(student="", path=part.path, renamed=renamed), part.plan, failure)


def _test_score(
    cell: nbformat.NotebookNode,
    event: CellEvent | None,
    points: float,
    limits: sandbox.Limits,
    part: Notebook,
    n: int | None,
) -> CellResult:
    """A test cell's score from its outputs, rebuilt as the kernel would send them, by nbgrader's rule."""
    if event is None:
        return CellResult(points=points, score=0.0, passed=False, message=_not_run(part, n, limits))
    outs: list[dict[str, Any]] = []
    if event.get("stderr"):
        outs.append(notebooks.stream_output("stderr", str(event["stderr"])))
    if event.get("status") != "ok":
        ename, _, evalue = str(event.get("error") or event.get("status")).partition(":")
        outs.append(notebooks.error_output(ename.strip(), evalue.strip()))
    elif isinstance(event.get("display"), str):
        outs.append({"output_type": "execute_result", "data": {"text/plain": event["display"]}, "metadata": {}})
    cell.outputs = [nbformat.from_dict(o) for o in outs]
    try:
        score, _ = determine_grade(cell)
    except (ValueError, KeyError) as exc:  # a value above the points: nbgrader raises
        return CellResult(
            points=points, score=0.0, passed=False, message=f"scored 0: the test cell's value is not a score ({exc})"
        )
    score = float(score or 0.0)
    if event.get("status") == "timeout":
        message = cell_timeout_text(f"test cell {cell.metadata.nbgrader['grade_id']!r}", limits)
    elif event.get("status") != "ok":
        message = f"failed: {event.get('error')}"
    elif event.get("stderr"):
        message = "scored 0: the test wrote to standard error (nbgrader gives such a test cell no points)"
    elif score < points:
        message = f"partial credit: the test cell's value is {event.get('display')}"
    else:
        message = "passed"
    return CellResult(points=points, score=round(score, 6), passed=score >= points, message=message)


def _not_run(part: Notebook, n: int | None, limits: sandbox.Limits) -> str:
    """Why a test cell has no score: stopped at the time limit while it ran, or before it, or the process died."""
    outcome = part.outcome
    if outcome is None or not outcome.timed_out:
        return "not run: the notebook's process ended before this cell"
    if any(e.get("event") == "cell_start" and e.get("n") == n for e in outcome.events):
        where = "test cell" + (f" {part.plan.cells[n].grade_id!r}" if part.plan is not None and n is not None else "")
        return cell_timeout_text(where, limits)
    return "not run: the notebook was stopped at its time limit before this cell"


def _result(info: AssignmentInfo, sub: Submission, parts: list[Notebook], key: str, limits: sandbox.Limits) -> Result:
    """The submission's result: the cells of every notebook, the worst status, the notes."""
    statuses = [p.status for p in parts]
    if all(s == "missing" for s in statuses):
        status: Status = "missing"
    else:
        status = next(s for s in STATUSES if s in [x for x in statuses if x != "missing"])
    result = new_result(
        student=sub.student,
        assignment=info.name,
        notebook=parts[0].spec.stem,
        display_name=sub.display_name,
        timestamp=sub.timestamp,
        submitted_file=sub.original_name,
        layout=sub.layout,
        ignored_files=[f for f in sub.ignored if f not in {p.spec.name for p in parts}],
        max_score=info.max_score,
        key=key,
        status=status,
    )
    result["notebooks"] = [p.spec.stem for p in parts]
    for part in parts:
        result["cells"].update({part.spec.key(gid): cell for gid, cell in part.cells.items()})
        if part.plan is not None:
            for kind, details in part.plan.repairs.items():
                result["repairs"].setdefault(kind, []).extend(f"{part.spec.name}: {d}" for d in details)
            said = comments(dataclasses.replace(info, release=part.spec.release), part.plan)
            result["comments"].update({part.spec.key(gid): text for gid, text in said.items()})
            if part.outcome is not None:
                result["sandbox"] = sandbox_summary(part.outcome)
        result["notes"].extend(_notes(part, len(parts) > 1, limits))
    result["manual"] = [gid for gid, c in result["cells"].items() if c.get("score") is None]
    result["score"] = round(sum(c.get("score") or 0.0 for c in result["cells"].values()), 6)
    if len(parts) > 1:
        names = ", ".join(p.spec.name for p in parts)
        result["notes"].append(f"this assignment has {len(parts)} notebooks ({names}); its score is their sum")
    return result


def _notes(part: Notebook, several: bool, limits: sandbox.Limits) -> list[str]:
    where = f"{part.spec.name}: " if several else ""
    notes = []
    if part.status == "missing" and several:
        notes.append(f"{part.spec.name} was not submitted: its cells score 0")
    if part.reason:
        notes.append(where + part.reason)
    if part.plan is not None and part.outcome is not None:  # where the run failed, what the matching repaired
        said = status_notes(part.status, part.plan, part.outcome, part.events, {}, limits)
        notes.extend(where + note for note in said)
    if part.left_out:
        notes.append(where + f"not kept (over {FILES_CAP // 1024**2} MB in all): {', '.join(part.left_out)}")
    return notes
