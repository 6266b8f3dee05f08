"""The learners' corpus (``tests/fixtures/homework/``, its README says the format): reading its
files and the homework notebooks, and grading a file in-process with ``grading``.

The tests grade it (``tests/test_homework_grading.py`` and the tests of each place a notebook is
graded), and so does the release's mutant gate (:mod:`nbgrader_tools.mutants`); ``grading`` itself never
reads it, so that nothing of it reaches the learner kit.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbgrader_tools.cells import nbgrader_meta

if TYPE_CHECKING:  # grading is imported where it is used, as the learner's process would
    from sdpa_course.grading.compare import Verdict

REPO = Path(__file__).resolve().parents[1]
#: The corpus: one folder per assignment, one submission per file.
HERE = REPO / "tests" / "fixtures" / "homework"
ASSIGNMENTS = sorted(p.name for p in (REPO / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())
#: The course secret of every test that grades the corpus (in-process, nbgrader, class grader):
#: with it, each fixture's hidden inputs are those of a student named after the file.
TEST_SECRET = "corpus-test-secret"


def student_seed(assignment: str, student: str, secret: str = TEST_SECRET) -> int:
    """The hidden-test seed that nbgrader autograde and the class grader give ``student``
    under the course secret ``secret``."""
    from sdpa_course.grading.seeds import seed_for

    return seed_for(secret.encode(), assignment, student)


def grade(assignment: str, check_id: str, namespace: dict[str, Any], seed: int | None = None) -> Verdict:
    """One check of ``assignment`` on the functions of ``namespace``, in-process: on the check's
    default seed, or on ``seed`` (a hidden check's inputs)."""
    from sdpa_course import grading

    check = grading.get_check(assignment, check_id)
    return check.grade(namespace, check.default_seed if seed is None else seed)


@dataclass
class Expected:
    """What a fixture must get: points per graded cell and words of the messages."""

    #: grade_id -> (lowest, highest) points; None for "all the cell's points"; absent: 0.
    points: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    #: grade_id -> texts its message must contain.
    messages: dict[str, list[str]] = field(default_factory=dict)
    #: grade_id -> keys of grading.all_hints(): the mistakes its message names, and no other.
    mistakes: dict[str, list[str]] = field(default_factory=dict)

    def bounds(self, grade_id: str, full: float) -> tuple[float, float]:
        if grade_id not in self.points:
            return (0.0, 0.0)
        got = self.points[grade_id]
        return (full, full) if got is None else got

    @property
    def full(self) -> set[str]:
        """The cells that must get all their points."""
        return {gid for gid, b in self.points.items() if b is None}


def source_notebook(assignment: str) -> dict[str, Any]:
    return json.loads((REPO / "solutions" / assignment / f"{assignment}.ipynb").read_text())


def release_notebook(assignment: str) -> dict[str, Any]:
    return json.loads((REPO / "exercises" / assignment / f"{assignment}.ipynb").read_text())


def _source(cell: dict[str, Any]) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else str(src)


def fixtures(assignment: str | None = None) -> list[tuple[str, Path]]:
    """Every (assignment, fixture file), sorted."""
    names = [assignment] if assignment else ASSIGNMENTS
    return [(name, path) for name in names for path in sorted((HERE / name).glob("*.py"))]


def _points(token: str, path: Path) -> tuple[str, tuple[float, float] | None]:
    gid, _, value = token.partition("=")
    if not value:
        return gid, None
    lo, _, hi = value.partition("..")
    try:
        return gid, (float(lo), float(hi or lo))
    except ValueError:
        raise ValueError(f"{path}: cannot read points {token!r} (write id, id=1.5 or id=0.5..1.5)") from None


def parse(path: Path) -> tuple[Expected, dict[str, str]]:
    """(what the fixture must get, {answer grade_id: cell source}) of a fixture (see README.md)."""
    text = path.read_text()
    earns_line = re.search(r"^# earns:(.*)$", text, re.M)
    if earns_line is None:
        raise ValueError(f"{path} has no '# earns:' line")
    expected = Expected()
    for token in earns_line.group(1).split():
        if token != "nothing":
            gid, bounds = _points(token, path)
            expected.points[gid] = bounds
    for line in re.findall(r"^# message: (\S+?): (.+)$", text, re.M):
        expected.messages.setdefault(line[0], []).append(line[1].strip())
    for gid, key in re.findall(r"^# mistake: (\S+?): (\S+)$", text, re.M):
        expected.mistakes.setdefault(gid, []).append(key)
    parts = re.split(r"^# %% (\S+)\n", text, flags=re.M)
    cells = {parts[i]: parts[i + 1].rstrip() + "\n" for i in range(1, len(parts), 2)}
    return expected, cells


def submission(assignment: str, cells: dict[str, str], release: dict[str, Any] | None = None) -> dict[str, Any]:
    """The release notebook (``exercises/``, or ``release``) with some answer cells replaced."""
    nb = copy.deepcopy(release_notebook(assignment) if release is None else release)
    ids = {str(nbgrader_meta(c).get("grade_id")) for c in nb["cells"] if nbgrader_meta(c).get("solution")}
    unknown = set(cells) - ids
    if unknown:
        raise ValueError(f"{assignment} has no answer cells {sorted(unknown)}; it has {sorted(ids)}")
    for cell in nb["cells"]:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in cells:
            cell["source"] = cells[gid]
    return nb


def namespace(nb: dict[str, Any]) -> dict[str, Any]:
    """Run a notebook's setup and answer cells (not its tests, nor the "check before
    you submit" cell, which would run every check) in a fresh namespace."""
    ns: dict[str, Any] = {"__name__": "__learner__"}
    for cell in nb["cells"]:
        meta = nbgrader_meta(cell)
        if cell["cell_type"] == "code" and not meta.get("grade") and meta.get("grade_id") != "check_before_submit":
            exec(compile(_source(cell), f"<{meta.get('grade_id', 'cell')}>", "exec"), ns)
    return ns


def solution_namespace(assignment: str) -> dict[str, Any]:
    return namespace(source_notebook(assignment))


def fixture_namespace(assignment: str, path: Path, release: dict[str, Any] | None = None) -> dict[str, Any]:
    return namespace(submission(assignment, parse(path)[1], release))


def corpus_verdicts(assignment: str, path: Path) -> dict[str, Verdict]:
    """Every check of a fixture, graded in-process as the student named after the file:
    the visible checks on their fixed inputs, the hidden ones on that student's seed."""
    from sdpa_course import grading

    ns = fixture_namespace(assignment, path)
    seed = student_seed(assignment, path.stem)
    return {c.id: grade(assignment, c.id, ns, seed if c.hidden else None) for c in grading.checks_for(assignment)}


def rules_stated(message: str) -> set[str]:
    """The ids of the rules (``grading.rules.ALL_RULES``) whose statement a feedback message repeats:
    the rules that message applied."""
    from sdpa_course.grading.rules import ALL_RULES

    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip()

    return {rule.id for rule in ALL_RULES if norm(rule.statement) in norm(message)}
