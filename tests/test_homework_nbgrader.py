"""The homework through nbgrader itself, end to end, as nbgrader's own tests do.

For every assignment, in a scratch course folder (never in the repository):
copy the source notebook, ``nbgrader generate_assignment``, submit the
instructor's solution, the blank release and the fixture submissions of
``tests/fixtures/homework/<assignment>/``, run one ``nbgrader autograde`` over
all of them and ``nbgrader generate_feedback``, then read the scores from the
gradebook (``nbgrader validate`` and exit codes say nothing about scores).

The assignments run in parallel, one nbgrader process per core, the first
time a test needs them.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fixtures.homework import submissions as subs

import grading
from nbgrader_tools import scratch_course as nbt
from nbgrader_tools.cells import nbgrader_meta

HIDDEN_MARKERS = ("BEGIN HIDDEN TESTS", "hidden=True")
# The hidden test cells derive each student's seed from the course secret
# (grading/seeds.py): the corpus's secret, so nbgrader grades each fixture on
# the same inputs as the in-process tests and the class grader.
os.environ["COURSE_GRADING_SECRET"] = subs.TEST_SECRET


@dataclass
class Run:
    """One assignment taken through nbgrader."""

    root: Path
    release: dict
    expected: dict[str, subs.Expected]  # student -> the points each cell must get
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _pipeline(root: Path, assignment: str) -> Run:
    """generate_assignment, autograde and generate_feedback, in one nbgrader process.

    The blank and the fixture submissions are made from the committed release
    (the first test checks that it is exactly what generate_assignment makes).
    """
    nbt.make_course(root, [assignment])
    checks = grading.checks_for(assignment)
    expected = {"solution": subs.Expected(points=dict.fromkeys((c.id for c in checks), None)), "blank": subs.Expected()}
    nbt.submit(root, "solution", assignment, root / "solutions" / assignment / f"{assignment}.ipynb")
    nbt.submit(root, "blank", assignment, subs.REPO / "exercises" / assignment / f"{assignment}.ipynb")
    for _, path in subs.fixtures(assignment):
        earns, cells = subs.parse(path)
        expected[path.stem] = earns
        nbt.submit(root, path.stem, assignment, subs.submission(assignment, cells))
    output = nbt.run_nbgrader_batch(
        [
            ["generate_assignment", assignment, "--force"],
            ["autograde", assignment, "--force"],
            ["generate_feedback", assignment, "--force"],
        ],
        cwd=root,
    )
    release = json.loads(nbt.release_path(root, assignment).read_text())
    run = Run(root, release, expected, nbt.scores(root, assignment))
    run.seconds = nbt.batch_timings(output)
    run.seconds["autograde per notebook"] = run.seconds["autograde"] / len(expected)
    (root / "timing.json").write_text(json.dumps(run.seconds, indent=1))
    return run


@pytest.fixture(scope="session")
def homework_runs(request, tmp_path_factory) -> dict[str, Run | BaseException]:
    """Every assignment whose tests were selected, taken through nbgrader in parallel."""
    wanted = sorted(
        {
            item.callspec.params["assignment"]
            for item in request.session.items
            if getattr(getattr(item, "module", None), "__name__", None) == __name__
            and "assignment" in getattr(getattr(item, "callspec", None), "params", {})
        }
    )
    base = tmp_path_factory.mktemp("homework")

    def one(name: str) -> Run | BaseException:
        try:
            return _pipeline(base / name, name)
        except BaseException as exc:  # reported by the tests of that assignment
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(len(wanted), os.cpu_count() or 2))) as pool:
        return dict(zip(wanted, pool.map(one, wanted)))


@pytest.fixture
def run(homework_runs, assignment) -> Run:
    result = homework_runs[assignment]
    if isinstance(result, BaseException):
        raise result
    return result


pytestmark = pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)


def test_committed_exercises_are_what_nbgrader_generates(run, assignment):
    committed = subs.release_notebook(assignment)
    assert committed == run.release, (
        f"exercises/{assignment} differs from what nbgrader generates from solutions/{assignment}; "
        f"regenerate it with: python -m nbgrader_tools release {assignment}"
    )
    folder = subs.REPO / "exercises" / assignment
    assert sorted(p.name for p in folder.iterdir()) == [f"{assignment}.ipynb"]


def test_the_solution_gets_full_marks_and_the_blank_release_zero(run, assignment):
    points = {c.id: c.points for c in grading.checks_for(assignment)}
    total = sum(points.values())
    assert run.scores["solution"] == {**points, "total": total}
    assert run.scores["blank"] == {**dict.fromkeys(points, 0.0), "total": 0.0}


def test_partly_right_submissions_get_the_intended_partial_credit(run, assignment):
    """Every corpus file gets its points in nbgrader too (partial credit is the
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
