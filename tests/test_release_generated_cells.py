"""``./course release`` writes the generated cells of a source notebook, and writes nothing when nothing changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from nbgrader_tools.cells import nbgrader_meta
from nbgrader_tools.generated import RULES_ID, START_HERE_ID, sync

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"


def copy_source(tmp_path: Path) -> Path:
    path = tmp_path / f"{ASSIGNMENT}.ipynb"
    shutil.copy(REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", path)
    return path


def test_a_second_release_with_nothing_changed_leaves_the_file_byte_for_byte(tmp_path):
    path = copy_source(tmp_path)
    committed = path.read_bytes()
    assert sync(path, ASSIGNMENT) is False
    assert path.read_bytes() == committed


def test_a_stale_rules_cell_is_rewritten_and_keeps_its_cell_id(tmp_path):
    path = copy_source(tmp_path)
    nb = nbformat.read(str(path), as_version=4)
    rules = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == RULES_ID)
    start = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == START_HERE_ID)
    ids, text = (rules.id, start.id), rules.source
    rules.source = "## Rules that cost points\n\nan old text"
    nbformat.write(nb, str(path))
    assert sync(path, ASSIGNMENT) is True
    again = nbformat.read(str(path), as_version=4)
    by_id = {nbgrader_meta(c).get("grade_id"): c for c in again.cells}
    assert (by_id[RULES_ID].id, by_id[START_HERE_ID].id) == ids
    assert by_id[RULES_ID].source == text
