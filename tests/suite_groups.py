"""How the suite is grouped: marks for the fast loop, and the order files start in.

``./course test`` runs the suite in parallel with pytest-xdist, one file per
unit of work (``--dist loadfile``), so a file's module fixtures (a graded class,
a built kit) are made once. A worker takes the next file when it is free, so
the files that take longest start first; the rest fill in around them.

``./course test --fast`` leaves out the files marked here ``browser`` (they need
Chromium) and ``cluster`` (they start a Dask cluster).
"""

from __future__ import annotations

from typing import Any

# Files by the marks they get, from their names.
MARKS = {
    "browser": lambda name: name.startswith("test_browser_") or name == "test_jupyterhub.py",
    "cluster": lambda name: name == "test_class_grading_cluster.py",
}

# The longest files (pytest --durations on a 2-core machine), longest first.
START_FIRST = (
    "test_browser_jupyterlite.py",
    "test_browser_phone.py",
    "test_browser_pages.py",
    "test_class_grading.py",
    "test_homework_nbgrader.py",
    "test_class_grading_cluster.py",
    "test_plain_nbgrader_assignment.py",
    "test_fingerprint.py",
    "test_pdf.py",
    "test_browser_dark_mode.py",
    "test_browser_progress.py",
    "test_learner_kit.py",
    "test_sandbox_modes.py",
    "test_guide_commands.py",
    "test_browser_explorers.py",
    "test_browser_reader.py",
    "test_homework_tolerances.py",
    "test_jupyterhub.py",
    "test_exchange_round_trip.py",
    "test_solution_pages.py",
    "test_course_toc.py",
)


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "browser: opens the built book in Chromium (left out by ./course test --fast)")
    config.addinivalue_line("markers", "cluster: starts a Dask cluster (left out by ./course test --fast)")


def _start_rank(item: Any) -> int:
    name = item.path.name
    return START_FIRST.index(name) if name in START_FIRST else len(START_FIRST)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    import pytest

    for item in items:
        for mark, applies in MARKS.items():
            if applies(item.path.name):
                item.add_marker(getattr(pytest.mark, mark))
    # A stable sort keeps every file's own test order, and the same order in every worker.
    items.sort(key=_start_rank)
