"""``./course grade`` gives what ``nbgrader autograde`` gives, on nbgrader's own autograde scenarios.

The notebooks ship with the pinned nbgrader, in ``nbgrader/tests/apps/files/``,
and ``nbgrader/tests/apps/test_nbgrader_autograde.py`` says what nbgrader gives
each student (:data:`SCENARIOS` quotes its totals; the tests' names are in each
entry). Each scenario's source becomes an instructor's own assignment of a
scratch course; nbgrader releases it and both graders grade the same
submissions. Per student they must agree on every cell's score, on whether
the notebook waits for manual grading and on the files of the autograded
folder; and the totals must be nbgrader's test's.

The default run grades :data:`DEFAULT_TIER`, the scenarios that carry what only
this file proves (autotests, hashed and hidden; a cheat attempt on the
traceback; cells retyped by the learner; an extra or a missing notebook);
``./course test --matrix`` adds the rest: a time limit and an endless loop
(``tests/test_plain_nbgrader_assignment.py`` stops one on the course's own
template), a file a notebook writes, and autotest_simple (autotest_multi holds
its tests).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import nbformat
import nbgrader
import pytest
from suite_groups import matrix_only
from test_class_grading import needs_sandbox

from classgrader import settings
from classgrader.assignments.errors import SetupError
from classgrader.books import gradebook, nbgrader_record
from nbgrader_tools.cells import nbgrader_meta
from nbgrader_tools.scratch_course import REPO, nbgrader_env, run_nbgrader_batch

FILES = Path(nbgrader.__file__).parent / "tests" / "apps" / "files"
SECRET = "nbgrader-scenarios-test-secret"
CODE_STUB = 'c.ClearSolutions.code_stub = dict(python="# YOUR CODE HERE")'


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One of nbgrader's autograde tests: its source notebooks, each student's files, nbgrader's totals."""

    test: str  # the tests in nbgrader's test_nbgrader_autograde.py whose students these are
    source: dict[str, str]  # notebook name -> nbgrader's file
    students: dict[str, dict[str, str]]  # student -> {submitted name: nbgrader's file}
    totals: dict[str, float]  # student -> the assignment's score that nbgrader's test asserts
    autotests: bool = False  # autotests.yml in the course's root, as nbgrader's tests place it
    config: str = ""  # lines nbgrader's test adds to nbgrader_config.py
    grade_options: tuple[str, ...] = ()  # the same setting for ./course grade


P1 = "p1.ipynb"
#: Files made here from nbgrader's: name -> (nbgrader's file, {grade id: the cell type the learner gave it}).
#: nbgrader's OverwriteCells gives a graded, solution or locked cell its recorded type back.
DERIVED = {"cell-types-changed.ipynb": ("submitted-changed.ipynb", {"set_a": "markdown", "bar": "markdown"})}
SCENARIOS = {
    # Three of nbgrader's tests release the same notebook: their students share one course.
    "grade": Scenario(
        "test_grade, test_showtraceback_exploit, test_skip_extra_notebooks",
        {P1: "submitted-unchanged.ipynb"},
        {
            "foo": {P1: "submitted-unchanged.ipynb"},
            "bar": {P1: "submitted-changed.ipynb"},
            "qux": {P1: "cell-types-changed.ipynb"},  # not in nbgrader's tests: bar's answers, two cells retyped
            "spam": {P1: "submitted-cheat-attempt.ipynb"},
            "eggs": {P1: "submitted-cheat-attempt-alternative.ipynb"},
            "ham": {"p1 copy.ipynb": "submitted-unchanged.ipynb", P1: "submitted-changed.ipynb"},  # extra notebook
        },
        {"foo": 1, "bar": 2, "qux": 2, "spam": 1, "eggs": 1, "ham": 2},
    ),
    "autotest_simple": Scenario(
        "test_grade_autotest",
        {P1: "autotest-simple.ipynb"},
        {"foo": {P1: "autotest-simple-unchanged.ipynb"}, "bar": {P1: "autotest-simple-changed.ipynb"}},
        {"foo": 0, "bar": 1},
        autotests=True,
    ),
    "autotest_hashed": Scenario(
        "test_grade_hashed_autotest",
        {P1: "autotest-hashed.ipynb"},
        {"foo": {P1: "autotest-hashed-unchanged.ipynb"}, "bar": {P1: "autotest-hashed-changed.ipynb"}},
        {"foo": 0, "bar": 1},
        autotests=True,
    ),
    "autotest_multi": Scenario(
        "test_grade_complex_autotest",
        {P1: "autotest-multi.ipynb"},
        {"foo": {P1: "autotest-multi-unchanged.ipynb"}, "bar": {P1: "autotest-multi-changed.ipynb"}},
        {"foo": 0, "bar": 3},
        autotests=True,
    ),
    "autotest_hidden": Scenario(
        "test_hidden_tests_autotest",
        {P1: "autotest-hidden.ipynb"},
        {
            "foo": {P1: "autotest-hidden-unchanged.ipynb"},
            "bar": {P1: "autotest-hidden-changed-wrong.ipynb"},
            "baz": {P1: "autotest-hidden-changed-right.ipynb"},
        },
        {"foo": 0, "bar": 0, "baz": 1},
        autotests=True,
        config=CODE_STUB,
    ),
    "timeout": Scenario(
        "test_autograde_timeout",
        {P1: "timeout.ipynb"},
        {"foo": {P1: "timeout.ipynb"}},
        {"foo": 0},  # the bar of nbgrader's test: a cell that sleeps 5 s, stopped at 2 s
        config="c.Execute.timeout = 2",
        grade_options=("--timeout", "2"),
    ),
    "infinite_loop": Scenario(
        "test_infinite_loop",
        {P1: "infinite-loop.ipynb"},
        {"foo": {P1: "infinite-loop.ipynb"}},
        {"foo": 0},
        config="c.Execute.timeout = 1",
        grade_options=("--timeout", "1"),
    ),
    "side_effects": Scenario(
        "test_side_effects",
        {P1: "side-effects.ipynb"},
        {"foo": {P1: "side-effects.ipynb"}},
        {"foo": 0},
    ),
    "missing_notebook": Scenario(
        "test_grade_missing_notebook",
        {P1: "submitted-unchanged.ipynb", "p2.ipynb": "submitted-unchanged.ipynb"},
        {"foo": {P1: "submitted-changed.ipynb"}},
        {"foo": 2},
    ),
}

#: What the default run grades (--matrix: every scenario); named, so a scenario added later goes to --matrix.
DEFAULT_TIER = ("grade", "autotest_hashed", "autotest_multi", "autotest_hidden", "missing_notebook")
NAMES = [name if name in DEFAULT_TIER else matrix_only(name) for name in sorted(SCENARIOS)]


def derive(folder: Path) -> Path:
    """:data:`DERIVED`'s files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (file, retyped) in DERIVED.items():
        nb = nbformat.read(FILES / file, as_version=4)
        for cell in nb.cells:
            new_type = retyped.get(nbgrader_meta(cell).get("grade_id"))
            if new_type == "markdown" and cell.cell_type == "code":
                nb.cells[nb.cells.index(cell)] = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata)
        nbformat.write(nb, folder / name)
    return folder


def scenario_course(root: Path, name: str, scenario: Scenario) -> Path:
    """A course holding the scenario as assignment ``name``, released by nbgrader, its submissions in place."""
    course = root / name
    (course / "solutions" / name).mkdir(parents=True)
    config = (REPO / "nbgrader_config.py").read_text() + "\n" + scenario.config + "\n"
    (course / "nbgrader_config.py").write_text(config)
    for notebook, file in scenario.source.items():
        shutil.copy(FILES / file, course / "solutions" / name / notebook)
    if scenario.autotests:
        shutil.copy(FILES / "autotests.yml", course / "autotests.yml")
    for student, files in scenario.students.items():
        folder = course / "submitted" / student / name
        folder.mkdir(parents=True)
        for submitted, file in files.items():
            shutil.copy(FILES / file if (FILES / file).is_file() else root / "derived" / file, folder / submitted)
    return course


def course_grade(course: Path, name: str, options: tuple[str, ...]) -> Path:
    """``./course grade`` as an instructor runs it; returns its output folder."""
    out = course / "ours"
    cmd = [str(REPO / "course"), "grade", name, str(course / "submitted"), "--course", str(course)]
    cmd += ["--out", str(out), "--quiet", *options]
    done = subprocess.run(
        cmd, env=nbgrader_env() | {"COURSE_GRADING_SECRET": SECRET}, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def nbgrader_view(db: Path, name: str) -> dict[str, dict[str, tuple[dict, bool]]]:
    """``{student: {notebook: ({grade_id: auto score}, needs manual grading)}}`` from a gradebook."""
    with gradebook.open_gradebook(gradebook.sqlite_url(db), "sdpa-course") as gb:
        return {
            sub.student_id: {
                nb.name: ({g.name: g.auto_score for g in nb.grades}, bool(nb.needs_manual_grade))
                for nb in sub.notebooks
            }
            for sub in gb.assignment_submissions(name)
        }


def total(view: dict[str, tuple[dict, bool]]) -> float:
    return sum(score or 0 for cells, _ in view.values() for score in cells.values())


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Callable[[str], dict]:
    """A scenario graded by nbgrader (its gradebook, in the course) and by ./course grade, the first
    time a test asks for it: the run grades only the scenarios it takes."""
    root = tmp_path_factory.mktemp("scenarios")
    derive(root / "derived")
    done: dict[str, dict] = {}

    def run(name: str) -> dict:
        if name not in done:
            course = scenario_course(root, name, SCENARIOS[name])
            run_nbgrader_batch([["generate_assignment", name, "--force"], ["autograde", name, "--force"]], cwd=course)
            ours = course_grade(course, name, SCENARIOS[name].grade_options)
            folder = ours / "reports" / name / "results"
            results = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}
            done[name] = {"course": course, "ours": ours, "results": results}
        return done[name]

    return run


@needs_sandbox
@pytest.mark.parametrize("name", NAMES)
def test_each_student_scores_as_nbgrader_autograde_scores_them(graded, name):
    run = graded(name)
    theirs = nbgrader_view(run["course"] / "gradebook.db", name)
    ours = nbgrader_view(run["ours"] / "gradebook.db", name)
    assert ours == theirs
    assert {student: total(notebooks) for student, notebooks in ours.items()} == SCENARIOS[name].totals
    assert {s: r["score"] for s, r in run["results"].items()} == SCENARIOS[name].totals


@needs_sandbox
@pytest.mark.parametrize("name", NAMES)
def test_the_autograded_folder_holds_what_nbgrader_keeps(graded, name):
    run = graded(name)
    theirs = run["course"] / "autograded"
    ours = run["ours"] / "autograded"
    assert files_of_each(ours, name) == files_of_each(theirs, name)


def files_of_each(autograded: Path, name: str) -> dict[str, list[str]]:
    """``{student: the file names in autograded/<student>/<name>/}``."""
    return {s.name: sorted(f.name for f in (s / name).iterdir()) for s in sorted(autograded.iterdir())}


@pytest.mark.parametrize(
    ("autotests", "named"),
    [
        (None, "autotests.yml"),  # no autotests.yml anywhere
        ("python3: {}\n", "'templates'"),  # one without the templates an AUTOTEST directive expands into
    ],
)
def test_a_source_nbgrader_refuses_gets_nbgraders_reason(tmp_path, autotests, named):
    course = scenario_course(tmp_path, "refused", dataclasses.replace(SCENARIOS["autotest_simple"], students={}))
    if autotests is None:
        (course / "autotests.yml").unlink()
    else:
        (course / "autotests.yml").write_text(autotests)
    url = gradebook.sqlite_url(tmp_path / "gradebook.db")
    with pytest.raises(SetupError, match="solutions/refused") as caught:
        nbgrader_record.record(course, "refused", url, "sdpa-course", settings.read(course).nbgrader)
    assert named in str(caught.value)
