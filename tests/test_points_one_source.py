"""Points are written once, in ``sdpa_course/grading/hwN.py``; ``./course release`` writes the rest.

In a copy of the course (never the repository): a check's points change in
``sdpa_course/grading/hw9.py``; the release then carries the new value in the test cell's
metadata, the section heading and the marked prose, in the source notebook and
in the learners' release; the instructors' table in the solutions book shows
it; and a number of points written by hand in a statement stops the release
with a message naming the file, the number and the checks' values, writing
nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from course_copy import REPO, copy_course, run_in

from nbgrader_tools import points
from nbgrader_tools.cells import nbgrader_meta

HW9 = "hw9_attention_backward"
SOURCE = Path("solutions") / HW9 / f"{HW9}.ipynb"
RELEASE = Path("exercises") / HW9 / f"{HW9}.ipynb"


def set_points(module: Path, check_id: str, value: int) -> None:
    text = module.read_text(encoding="utf-8")
    pattern = re.compile(rf'(A\.add\(\s*"{check_id}",\s*\[[^\]]*\],\s*points=)\d+')
    assert len(pattern.findall(text)) == 1, check_id
    module.write_text(pattern.sub(rf"\g<1>{value}", text), encoding="utf-8")


def cell_points(path: Path) -> dict[str, float]:
    nb = nbformat.read(path, as_version=4)
    return {m["grade_id"]: float(m["points"]) for c in nb.cells if (m := nbgrader_meta(c)).get("grade")}


def markdown(path: Path) -> str:
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


@pytest.fixture(scope="module")
def changed(tmp_path_factory) -> Path:
    """A copy of the course where attention_dv is worth 3 points (1 in the repository),
    after ``python -m nbgrader_tools release hw9`` (what ``./course release`` runs)."""
    copy = copy_course(tmp_path_factory.mktemp("points") / "course")
    set_points(copy / "sdpa_course" / "grading" / "hw9.py", "attention_dv", 3)
    done = run_in(copy, ["-m", "nbgrader_tools", "release", HW9])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attention_dv" in done.stdout and "-> 3 points" in done.stdout  # it says what it rewrote
    return copy


def test_the_repository_has_no_stale_or_hand_written_points():
    for source in sorted((REPO / "solutions").glob("hw*/hw*.ipynb")):
        name = source.parent.name
        assert points.problems(nbformat.read(source, as_version=4), name) == [], name


def test_release_writes_the_new_points_into_metadata_heading_and_prose(changed):
    before = cell_points(REPO / SOURCE)
    assert before["attention_dv"] == 1  # the repository itself is untouched
    for notebook in (changed / SOURCE, changed / RELEASE):
        after = cell_points(notebook)
        assert after == {**before, "attention_dv": 3.0}, notebook
        text = markdown(notebook)
        # section 2 holds attention_dv (3), its hidden twin (1) and dQ/dK (2 + 2): 8; section 1 is unchanged
        sections = {int(n): int(p) for n, p in re.findall(r"^## (\d+)\. .*\((\d+) points\)$", text, flags=re.M)}
        assert sections[1] == 4 and sections[2] == 8, (notebook, sections)
        assert "$dV$ (3 + 1 points)" in text and "(2 + 2 points)" in text, notebook
    assert "(6 points)" in markdown(REPO / SOURCE) and "(1 + 1 points)" in markdown(REPO / SOURCE)


def test_a_hand_written_number_of_points_stops_the_release_and_names_both_values(changed):
    source = changed / SOURCE
    nb = nbformat.read(source, as_version=4)
    statement = next(c for c in nb.cells if "Back through attention" in c.source)
    statement.source += "\n\nThe dV test is worth 5 points."
    nbformat.write(nb, source)
    before = source.read_bytes()
    release_before = (changed / RELEASE).read_bytes()
    done = run_in(changed, ["-m", "nbgrader_tools", "release", HW9])
    assert done.returncode == 1
    message = done.stderr
    assert "course release:" in message
    assert SOURCE.as_posix() in message  # the file
    assert "'5 points'" in message  # the number written by hand
    assert "attention_dv = 3" in message  # the checks' value
    assert "Traceback" not in message
    assert source.read_bytes() == before and (changed / RELEASE).read_bytes() == release_before


def test_the_instructors_table_in_the_solutions_book_shows_the_new_points(changed, tmp_path):
    """The solutions book executes every page at each build (execute_notebooks: force), so
    its table follows sdpa_course/grading/ with no cache to go stale."""
    done = run_in(changed, ["-m", "nbgrader_tools.solution_book", HW9, "--out", str(tmp_path / "book")])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    page = (tmp_path / "book" / "html" / "instructors.html").read_text(encoding="utf-8")
    rows = dict(re.findall(r"<td><code>(attention_[a-z_]+)</code></td><td>.*?</td><td>([\d.]+)</td>", page))
    assert rows["attention_dv"] == "3" and rows["attention_dv_hidden"] == "1", rows
    assert f"<code>{HW9}</code><br>12 points" in page  # 4 + 8
