"""``./course grade --preview`` shows what a regrade would change, writes nothing, and ``--regrade`` then does it.

In a copy of the course (tests/course_copy.py), three learners hand in hw2:
the solution, the blank release, and the solution with every result off by
one part in 10^7 (right to float32's precision, wrong to float64's). After
the first grading, the float64 tolerance of the copy's checks is loosened to
1e-6, as an instructor might fix a check mid-term. The preview must name the
third learner alone, moving up; leave every file of the output folder as it
was; and ``--regrade`` must then give exactly the scores it showed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from course_copy import copy_course
from test_class_grading import needs_sandbox
from test_fingerprint import grade_in_copy

from devtools.sample_submissions import Builder

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"
MOVE = re.compile(r"^  (\S+): (\S+) -> (\S+) \(([+-][\d.e+-]+)\)", re.M)


def finals(course: Path) -> dict[str, float]:
    folder = course / "out" / "reports" / ASSIGNMENT / "results"
    return {p.stem: json.loads(p.read_text())["late"]["final_score"] for p in folder.glob("*.json")}


def every_file(folder: Path) -> dict[str, str]:
    """Each file under ``folder`` by its path, with the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@needs_sandbox
def test_a_preview_names_who_moves_writes_nothing_and_the_regrade_matches_it(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SECRET", "preview-test-secret")
    course = copy_course(tmp_path / "course")
    builder = Builder(REPO, ASSIGNMENT)
    f = builder.function
    nudged = builder.with_cell_after_answer(
        f"_exact = {f}\n\ndef {f}(*args, **kwargs):\n    return _exact(*args, **kwargs) * (1 + 1e-7)\n"
    )
    notebooks = {"ada": builder.build("solution")[1], "bob": builder.build("blank")[1], "cyd": builder.dump(nudged)}
    for student, data in notebooks.items():
        (course / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        (course / "submitted" / student / ASSIGNMENT / builder.notebook).write_bytes(data)
    code, said = grade_in_copy(course)
    assert code == 0, said
    before = finals(course)
    assert before["ada"] == 10 and before["bob"] == 0 and 0 < before["cyd"] < 10, before

    compare = course / "sdpa_course" / "grading" / "compare.py"
    text = compare.read_text()
    assert '"float64": 1e-10' in text, "the float64 tolerance this test loosens has moved"
    compare.write_text(text.replace('"float64": 1e-10', '"float64": 1e-6'))
    written = every_file(course / "out")

    code, said = grade_in_copy(course, "--preview")
    assert code == 0, said
    moves = {m[0]: (float(m[1]), float(m[2]), float(m[3])) for m in MOVE.findall(said)}
    assert set(moves) == {"cyd"}, said
    old, new, change = moves["cyd"]
    assert old == before["cyd"] and new > old and change == pytest.approx(new - old)
    assert every_file(course / "out") == written, "the preview changed the output folder"

    code, said = grade_in_copy(course, "--regrade")
    assert code == 0, said
    assert finals(course) == {"ada": 10, "bob": 0, "cyd": new}
