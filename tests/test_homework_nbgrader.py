"""The homework through nbgrader itself, end to end, as nbgrader's own tests do.

For the assignments an environment test takes (``tests/suite_groups.py``;
every one with ``--matrix``), in a scratch course folder (never in the repository):
copy the source notebook, ``nbgrader generate_assignment``, submit the
instructor's solution, the blank release and the fixture submissions of
``tests/fixtures/homework/<assignment>/`` that carry a risk of nbgrader's own
(:func:`nbgrader_fixtures`; every one with ``--matrix``), run ``nbgrader
autograde`` over all of them and ``nbgrader generate_feedback``, then read the
scores from the gradebook (``nbgrader validate`` and exit codes say nothing
about scores). Every correct fixture goes through nbgrader: a sound method of
its own can still fail there alone (a warning on stderr scores its cell 0).

The assignments are shared among one nbgrader process per core (each process
runs its assignments' commands in one course folder, so nbgrader starts and
makes its gradebook once per process), the first time a test needs them.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.homework import submissions as subs

from nbgrader_tools import scratch_course as nbt
from nbgrader_tools.cells import nbgrader_meta
from sdpa_course import grading

HIDDEN_MARKERS = ("BEGIN HIDDEN TESTS", "hidden=True")
# The hidden test cells derive each student's seed from the course secret
# (sdpa_course/grading/seeds.py): the corpus's secret, so nbgrader grades each fixture on
# the same inputs as the in-process tests and the class grader.
os.environ["COURSE_GRADING_SECRET"] = subs.TEST_SECRET


@dataclass
class Run:
    """One assignment taken through nbgrader."""

    root: Path
    release: dict
    expected: dict[str, subs.Expected]  # student -> the points each cell must get
    scores: dict[str, dict[str, float]]


def nbgrader_fixtures(assignment: str, every: bool) -> list[tuple[Path, subs.Expected, dict]]:
    """The fixtures nbgrader grades: ``every`` one (``--matrix``), or those that carry a risk
    of nbgrader's own: each sound method of full marks (a warning it writes to stderr
    would cost it the cell there alone), the call of the reference (the own-code rule in
    nbgrader's kernel) and the first that earns partial credit (the number its cell leaves).
    The others' points are the in-process grading's (``test_homework_grading.py``) and the
    class grader's, in a kernel as nbgrader's (``test_class_grading.py``)."""
    ids = {c.id for c in grading.checks_for(assignment)}
    chosen, partial = [], False
    for _, path in subs.fixtures(assignment):
        earns, cells = subs.parse(path)
        first_partial = not partial and any(b is not None for b in earns.points.values())
        partial |= first_partial
        if every or earns.full == ids or path.stem == "calls_reference" or first_partial:
            chosen.append((path, earns, cells))
    return chosen


def _submit(root: Path, assignment: str, every: bool) -> dict[str, subs.Expected]:
    """The solution, the blank release and the fixtures (:func:`nbgrader_fixtures`), in ``submitted/``.

    The blank and the fixture submissions are made from the committed release
    (``tests/test_solution_pages.py`` checks that it is exactly what generate_assignment makes).
    """
    checks = grading.checks_for(assignment)
    expected = {"solution": subs.Expected(points=dict.fromkeys((c.id for c in checks), None)), "blank": subs.Expected()}
    nbt.submit(root, "solution", assignment, root / "solutions" / assignment / f"{assignment}.ipynb")
    nbt.submit(root, "blank", assignment, subs.REPO / "exercises" / assignment / f"{assignment}.ipynb")
    for path, earns, cells in nbgrader_fixtures(assignment, every):
        expected[path.stem] = earns
        nbt.submit(root, path.stem, assignment, subs.submission(assignment, cells))
    return expected


def _pipeline(root: Path, assignments: list[str], every: bool) -> dict[str, Run]:
    """generate_assignment, autograde and generate_feedback of ``assignments``, in one nbgrader process."""
    nbt.make_course(root, assignments)
    expected = {name: _submit(root, name, every) for name in assignments}
    nbt.run_nbgrader_batch(
        [
            [command, name, "--force"]
            for command in ("generate_assignment", "autograde", "generate_feedback")
            for name in assignments
        ],
        cwd=root,
    )
    return {
        name: Run(root, json.loads(nbt.release_path(root, name).read_text()), expected[name], nbt.scores(root, name))
        for name in assignments
    }


@pytest.fixture(scope="session")
def homework_runs(request, tmp_path_factory) -> dict[str, Run | BaseException]:
    """Every assignment whose tests were selected, taken through nbgrader, one process per core."""
    wanted = sorted(
        {
            item.callspec.params["assignment"]
            for item in request.session.items
            if getattr(getattr(item, "module", None), "__name__", None) == __name__
            and "assignment" in getattr(getattr(item, "callspec", None), "params", {})
        }
    )
    every = bool(request.config.getoption("--matrix"))
    base = tmp_path_factory.mktemp("homework")
    processes = min(len(wanted), os.cpu_count() or 2)
    groups = [wanted[i::processes] for i in range(processes)]

    def one(index: int) -> dict[str, Run | BaseException]:
        try:
            return dict(_pipeline(base / f"course{index}", groups[index], every))
        except BaseException as exc:  # reported by the tests of those assignments
            return dict.fromkeys(groups[index], exc)

    results: dict[str, Run | BaseException] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
        for found in pool.map(one, range(len(groups))):
            results.update(found)
    return results


@pytest.fixture
def run(homework_runs, assignment) -> Run:
    result = homework_runs[assignment]
    if isinstance(result, BaseException):
        raise result
    return result


pytestmark = [pytest.mark.matrix, pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)]


def test_the_solution_gets_full_marks_and_the_blank_release_zero(run, assignment):
    points = {c.id: c.points for c in grading.checks_for(assignment)}
    total = sum(points.values())
    assert run.scores["solution"] == {**points, "total": total}
    assert run.scores["blank"] == {**dict.fromkeys(points, 0.0), "total": 0.0}


def test_partly_right_submissions_get_the_intended_partial_credit(run, assignment):
    """Each corpus file gets its points in nbgrader too (partial credit is the
    number a partly right check leaves as its cell's output), and the same
    points as the in-process grading of the same student's inputs."""
    checks = {c.id: c for c in grading.checks_for(assignment)}
    for student, expected in run.expected.items():
        got = {cid: s for cid, s in run.scores[student].items() if cid != "total"}
        assert set(got) == set(checks), student
        for cid, score in got.items():
            lo, hi = expected.bounds(cid, checks[cid].points)
            assert lo - 1e-9 <= score <= hi + 1e-9, (student, cid, score, (lo, hi))
        if student not in ("solution", "blank"):
            verdicts = subs.corpus_verdicts(assignment, subs.HERE / assignment / f"{student}.py")
            assert got == {cid: checks[cid].score(v) for cid, v in verdicts.items()}, student
        assert run.scores[student]["total"] == pytest.approx(sum(got.values()))
    assert run.scores["calls_reference"]["total"] == 0.0


def test_hidden_tests_are_in_neither_the_release_nor_the_feedback(run, assignment):
    release_text = json.dumps(run.release)
    committed_text = (subs.REPO / "exercises" / assignment / f"{assignment}.ipynb").read_text()
    for marker in HIDDEN_MARKERS:
        assert marker not in release_text and marker not in committed_text
    for student in run.expected:
        html = (run.root / "feedback" / student / assignment / f"{assignment}.html").read_text()
        for marker in HIDDEN_MARKERS:
            assert marker not in html, (student, marker)
    # The source does have them, so the search above can find them.
    assert all(m in json.dumps(subs.source_notebook(assignment)) for m in HIDDEN_MARKERS)


def test_feedback_says_what_failed(run, assignment):
    html = (run.root / "feedback" / "blank" / assignment / f"{assignment}.html").read_text()
    assert "raised NotImplementedError" in html
    html = (run.root / "feedback" / "calls_reference" / assignment / f"{assignment}.html").read_text()
    assert "asks for your own implementation" in html


def test_no_test_cell_of_the_solution_writes_to_stderr_or_fails(run, assignment):
    path = run.root / "autograded" / "solution" / assignment / f"{assignment}.ipynb"
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", nbgrader_meta(cell).get("grade_id")
            assert output.get("name") != "stderr", (nbgrader_meta(cell).get("grade_id"), output)
