"""Stage 2 of grading one submission: run it in the sandbox.

The **scoring run** executes the notebook's own cells (not its test cells),
then, for each check, grading's collector calls the learner's functions on
the check's input cases and sends back the raw results. The visible checks
use their fixed inputs, the hidden ones inputs made from the learner's seed
(``grading.seeds.seed_for``: an HMAC of the course secret, which never enters
the sandbox). ``grading`` goes into the sandbox (its setup cells import it;
its collector runs there); ``lib`` does not: the reference is not there to
call.

The **in-kernel run**, for the record only, executes the notebook as
``nbgrader autograde`` would: every cell in order, the instructor's test
cells with their hidden tests on the same seed, ``lib`` present. It is
skipped when the scoring run timed out, ran out of memory or died.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

from classgrader import sandbox
from classgrader.assignments.course import AssignmentInfo
from classgrader.pipeline.intake import Submission
from classgrader.records import CellEvent, CheckEvent, Job, JobCell, JobCheck, RunFailure
from classgrader.stages import notebooks
from nbgrader_tools.cells import SELF_CHECK_ID, nbgrader_meta
from sdpa_course.grading.plain import Case


@dataclasses.dataclass
class Settings:
    """How submissions run: the sandbox's limits, whether sandboxed, whether the in-kernel run is made."""

    limits: sandbox.Limits = dataclasses.field(default_factory=sandbox.Limits)
    sandboxed: bool = True
    kernel_record: bool = True
    uid_base: int = 61000  # worker slot i runs as uid uid_base + i
    sandbox_mode: str = "auto"  # root, userns or auto (see classgrader.sandbox.mode)


@dataclasses.dataclass
class Runs:
    """What came back from the sandbox for one submission."""

    seed: int  # the hidden checks' seed
    cases: dict[str, list[Case]]  # check id -> its input cases
    outcome: sandbox.RunOutcome  # the scoring run
    cells: dict[Any, CellEvent]  # plan index -> the first report of that cell
    checks: dict[str, CheckEvent]  # check id -> the first report of that check
    failure: RunFailure | None  # None when the run ended well
    in_kernel: dict[str, str]  # test cell grade_id -> the in-kernel run's verdict ({} when not run)


def collector() -> str:
    """``module:function`` of grading's collector, the code that calls the learner's functions."""
    from sdpa_course import grading

    return f"{grading.run_cases.__module__}:{grading.run_cases.__name__}"


def run(
    info: AssignmentInfo,
    sub: Submission,
    plan: notebooks.Plan,
    settings: Settings,
    *,
    slot: int = 0,
    registry: sandbox.Registry | None = None,
) -> Runs:
    """The scoring run, then (settings allowing, and if it ended well) the in-kernel run."""
    from sdpa_course.grading import seeds

    seed = seeds.seed_for(info.secret, info.name, sub.student)
    cases = {c.id: c.make_cases(seed if c.hidden else None) for c in info.checks}
    job = Job(
        mode="score",
        # Not the test cells (the checks replace them), nor the learner's "check before you submit",
        # which needs lib (absent here) and changes nothing.
        cells=[c for c in job_cells(plan) if c["role"] != "test" and c["grade_id"] != SELF_CHECK_ID],
        checks=[
            JobCheck(id=c.id, functions=list(c.functions), collector=collector(), cases=cases[c.id])
            for c in info.checks
        ],
    )
    # One sandbox for both runs of this learner (and no one else): the record run's process is forked
    # from the same imports, and gets lib only once the scoring run's process has ended.
    with sandbox.Session(
        package_files("sdpa_course/grading", info.grading_dir),
        settings.limits,
        uid=settings.uid_base + slot,
        extra_files=sub.extra_files,
        sandboxed=settings.sandboxed,
        registry=registry,
        mode=settings.sandbox_mode,
    ) as session:
        outcome = session.run(job)
        start = next((e for e in outcome.events if e.get("event") == "start"), None)
        if settings.sandboxed and start is not None and start.get("uid") == 0:
            raise sandbox.SandboxUnavailable("a sandbox ran as root; refusing to grade with it")
        cells = {e.get("n"): cast(CellEvent, e) for e in outcome.events if e.get("event") == "cell"}
        checks: dict[str, CheckEvent] = {}
        for e in outcome.events:
            if e.get("event") == "check" and isinstance(e.get("id"), str) and e["id"] not in checks:
                checks[e["id"]] = cast(CheckEvent, e)
        failure = run_failure(outcome, cells, checks)
        in_kernel = {}
        if settings.kernel_record and failure is None:
            in_kernel = _in_kernel(info, plan, session, seed)
    return Runs(
        seed=seed, cases=cases, outcome=outcome, cells=cells, checks=checks, failure=failure, in_kernel=in_kernel
    )


def job_cells(plan: notebooks.Plan) -> list[JobCell]:
    """The plan's cells that run, for the sandbox: index, source, role and grade_id."""
    return [JobCell(n=i, source=c.source, role=c.role, grade_id=c.grade_id) for i, c in enumerate(plan.cells) if c.runs]


def package_files(name: str, folder: Path) -> dict[str, Path]:
    """Every .py file of a package, keyed by its path ``name/...`` inside the sandbox's /grader.

    ``name`` is ``sdpa_course/grading`` or ``sdpa_course/lib``, without ``sdpa_course/__init__.py``:
    inside the sandbox ``sdpa_course`` is a namespace package, so the record run's ``lib``, handed
    to it in a second folder on its path, joins the ``grading`` the scoring run imported."""
    return {
        f"{name}/{p.relative_to(folder).as_posix()}": p
        for p in sorted(folder.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def run_failure(o: sandbox.RunOutcome, cells: dict[Any, CellEvent], checks: dict[str, CheckEvent]) -> RunFailure | None:
    """How the run ended badly (the most serious first), or None."""
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
    return None


def _in_kernel(info: AssignmentInfo, plan: notebooks.Plan, session: sandbox.Session, seed: int) -> dict[str, str]:
    """Run the cells in order with the instructor's test cells (hidden tests
    included, on the learner's seed) and ``lib`` available, as nbgrader would;
    per test cell "passed", "failed", "partial <score>" (a number as the
    cell's value, nbgrader's partial credit) or "not run"."""
    source_tests = {}
    for cell in info.source.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution") and meta.get("grade_id"):
            source_tests[meta["grade_id"]] = cell.source
    cells = []
    for c in job_cells(plan):
        if c["role"] == "test":
            c = JobCell(
                n=c["n"],
                source=source_tests.get(c["grade_id"] or "", c["source"]),
                role=c["role"],
                grade_id=c["grade_id"],
            )
        cells.append(c)
    job = Job(mode="record", cells=cells, checks=[], hidden_seed=int(seed))
    outcome = session.run(job, files=package_files("sdpa_course/lib", info.lib_dir))
    by_n = {e.get("n"): e for e in outcome.events if e.get("event") == "cell"}
    record = {}
    for c in cells:
        if c["role"] == "test" and c.get("grade_id"):
            gid = str(c["grade_id"])
            e = by_n.get(c["n"])
            if e is None:
                record[gid] = "not run"
            elif (
                e.get("status") == "ok"
                and not e.get("stderr")
                and isinstance(e.get("value"), (int, float))
                and not isinstance(e.get("value"), bool)
            ):
                record[gid] = f"partial {float(e['value']):g}"
            elif e.get("status") == "ok" and not e.get("stderr"):
                record[gid] = "passed"
            else:
                record[gid] = "failed"
    return record
