"""How the suite is grouped: marks for the fast loop, and the order files start in.

``./course test`` runs the suite in parallel with pytest-xdist, one file per
unit of work (``--dist loadfile``), so a file's module fixtures (a graded class,
a built kit) are made once. A worker takes the next file when it is free, so
the files that take longest start first; the rest fill in around them.

``./course test --fast`` leaves out the files marked here ``browser`` (they need
Chromium), ``cluster`` (they start a Dask cluster) and ``end_to_end`` (they run a
whole tool in a scratch course: nbgrader's apps, ``./course``, the class grader
with its sandboxes, jupyter-book, pip into a fresh venv; each proves what only
its environment can, in the default run).

Every assignment meets every corpus file in-process (``test_homework_grading``,
the cheapest place). Each other environment a notebook is graded or run in
(nbgrader autograde, the class grader, the kit's venv, JupyterLite) proves
what only it can prove on :data:`ENVIRONMENT_ASSIGNMENTS`; a test marked
``matrix`` takes every assignment only with ``./course test --matrix``.
The choice is by name, so a new assignment adds no environment run to the
default tier. Other parameters go to ``--matrix`` the same way, one value at a
time (:func:`matrix_only`): a kit venv for each Python but the oldest, the
nbgrader scenarios that repeat what another test proves, the book's pages whose
kinds of content (:func:`cover`) other pages hold; and a module fixture may
read the option (``test_sandbox_modes`` grades its class a third time).
"""

from __future__ import annotations

from typing import Any

import pytest

# The assignments an environment beyond the in-process grader takes by default,
# for the risks they carry: in hw5 the learner's functions draw from a random
# generator the checks hand them and are judged on statistics, not values; hw9
# is one of the heaviest (a backward pass checked with finite differences). No
# assignment plots.
ENVIRONMENT_ASSIGNMENTS = ("hw5_sqrt_dk_experiment", "hw9_attention_backward")

# The files that run a whole tool in a scratch course (nbgrader's apps, ./course, the class grader's
# sandboxes, jupyter-book, pip).
END_TO_END = (
    "test_nbgrader_scenarios.py",
    "test_plain_nbgrader_assignment.py",
    "test_guide_commands.py",
    "test_learner_kit.py",
    "test_kit_old_python.py",
    "test_tiny_lm.py",
    "test_exchange_round_trip.py",
    "test_homework_nbgrader.py",
    "test_release_run_all.py",
    "test_fingerprint.py",
    "test_class_grading.py",
    "test_class_grader_frictions.py",
    "test_sandbox_modes.py",
    "test_grade_preview.py",
    "test_after_deadline_class.py",
    "test_grading_secret.py",
    "test_mistake_pictures.py",
    "test_solution_pages.py",
    "test_course_toc.py",
    "test_rebuild.py",
    "test_points_one_source.py",
    "test_launch_links.py",
)

# Files by the marks they get, from their names.
MARKS = {
    "browser": lambda name: name.startswith("test_browser_") or name in ("test_jupyterhub.py", "test_pdf.py"),
    "cluster": lambda name: name == "test_class_grading_cluster.py",
    "end_to_end": lambda name: name in END_TO_END,
}

# The longest files (pytest --durations on a 2-core machine), longest first.
START_FIRST = (
    "test_browser_pages.py",
    "test_class_grading.py",
    "test_class_grading_cluster.py",
    "test_nbgrader_scenarios.py",
    "test_plain_nbgrader_assignment.py",
    "test_browser_jupyterlite.py",
    "test_browser_progress.py",
    "test_guide_commands.py",
    "test_homework_grading.py",
    "test_pdf.py",
    "test_jupyterhub.py",
    "test_mutants.py",
    "test_learner_kit.py",
    "test_homework_tolerances.py",
    "test_solution_pages.py",
    "test_browser_phone.py",
    "test_browser_explorers.py",
    "test_browser_reader.py",
    "test_mistake_pictures.py",
    "test_sandbox_modes.py",
    "test_homework_nbgrader.py",
    "test_course_toc.py",
    "test_browser_study_widgets.py",
    "test_browser_formgrader.py",
    "test_exchange_round_trip.py",
    "test_browser_search.py",
    "test_points_one_source.py",
    "test_fingerprint.py",
    "test_rebuild.py",
    "test_grade_preview.py",
)


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--matrix",
        action="store_true",
        help="run the tests marked matrix: every assignment, not only "
        + " and ".join(ENVIRONMENT_ASSIGNMENTS)
        + ", and every value marked matrix_only",
    )


def _taken(config: Any, assignment: str) -> bool:
    return bool(config.getoption("--matrix")) or assignment in ENVIRONMENT_ASSIGNMENTS


@pytest.fixture
def environment_assignments(request: Any) -> list[str]:
    """The assignments an environment test loops over: every one with --matrix, else the chosen ones."""
    from sdpa_course import grading

    return [a for a in grading.ASSIGNMENTS if _taken(request.config, a)]


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "browser: opens the built book in Chromium (left out by ./course test --fast)")
    config.addinivalue_line("markers", "cluster: starts a Dask cluster (left out by ./course test --fast)")
    config.addinivalue_line(
        "markers", "end_to_end: runs whole command lines in a scratch course (left out by ./course test --fast)"
    )
    config.addinivalue_line(
        "markers",
        "matrix: over `assignment`, every one only with --matrix; on another value, that value only with --matrix",
    )


def _start_rank(item: Any) -> int:
    name = item.path.name
    return START_FIRST.index(name) if name in START_FIRST else len(START_FIRST)


def matrix_only(value: Any, id: str | None = None) -> Any:
    """A parameter value that only ``./course test --matrix`` takes."""
    return pytest.param(value, id=id, marks=pytest.mark.matrix)


def cover(kinds: dict[str, frozenset[str]], weight: dict[str, int] | None = None) -> list[str]:
    """Values that between them hold every kind of ``kinds`` (value -> its kinds), sorted: the values
    of a parameter the default run takes when one of each kind proves what the rest would.

    Greedy: the value with the most kinds not yet held per unit of ``weight`` (its cost; 1 each
    unless given) first, ties to the lighter and then by name, so that every pytest-xdist worker
    collects the same values; then a value whose kinds the others already hold is dropped again,
    heaviest first."""
    weight = weight or dict.fromkeys(kinds, 1)
    left = set().union(*kinds.values())
    chosen: list[str] = []
    while left:
        best = max(sorted(kinds), key=lambda v: (len(kinds[v] & left) / weight[v], -weight[v]))
        chosen.append(best)
        left -= kinds[best]
    for value in sorted(chosen, key=lambda v: (-weight[v], v)):
        others = set().union(*(kinds[v] for v in chosen if v != value))
        if kinds[value] <= others:
            chosen.remove(value)
    return sorted(chosen)


def _outside_the_matrix(config: Any, item: Any) -> bool:
    """A test marked ``matrix`` runs without --matrix only for an environment assignment."""
    if item.get_closest_marker("matrix") is None or config.getoption("--matrix"):
        return False
    params = getattr(item, "callspec", None)
    return params is None or not _taken(config, params.params.get("assignment", ""))


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    for item in items:
        for mark, applies in MARKS.items():
            if applies(item.path.name):
                item.add_marker(getattr(pytest.mark, mark))
    left_out = {item for item in items if _outside_the_matrix(config, item)}
    if left_out:
        config.hook.pytest_deselected(items=list(left_out))
        items[:] = [item for item in items if item not in left_out]
    # A stable sort keeps every file's own test order, and the same order in every worker.
    items.sort(key=_start_rank)
