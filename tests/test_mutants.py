"""The release's mutant gate (nbgrader_tools/mutants.py): each assignment's catalogue of named mistakes
(its corpus files that do not earn full marks) scores below full marks under several course
secrets, each correct corpus file earns full marks under them, and the gate names what fails."""

from __future__ import annotations

import json
import shutil

import pytest
from fixtures.homework import submissions as subs
from suite_groups import matrix_only

from nbgrader_tools import corpus, mutants, scratch_course
from sdpa_course import grading


def test_every_assignment_has_mutants_unless_listed_as_pending():
    for assignment in grading.ASSIGNMENTS:
        found = mutants.catalogue(assignment)
        pending = mutants.PENDING.get(mutants.short(assignment))
        assert found or pending, f"{assignment} has no mutant: no corpus file that loses points"
        assert not (found and pending), (
            f"{assignment} has {len(found)} mutants: "
            f"remove {mutants.short(assignment)!r} from nbgrader_tools.mutants.PENDING"
        )


@pytest.mark.parametrize("assignment", subs.ASSIGNMENTS)
def test_no_mutant_survives_another_course_secret(assignment):
    """The corpus test grades every file under the tests' secret, with its exact points; here the
    other secrets of the gate, where only full marks or not matter."""
    assert mutants.SECRETS[0] == corpus.TEST_SECRET and len(mutants.SECRETS) >= 3
    assert mutants.refusals(assignment, secrets=mutants.SECRETS[1:]) == []


# Every assignment only with --matrix (the parameter is not named `assignment`, so no
# environment assignment runs it by default): 30 seeds of the whole catalogue take minutes.
@pytest.mark.parametrize("catalogue", [matrix_only(a, id=a) for a in subs.ASSIGNMENTS])
def test_a_hidden_check_catches_its_mutants_whatever_the_seed(catalogue):
    """Where a mutant's '# earns:' line says a hidden check loses points, it loses some under each of
    30 more seeds: a mistake is caught by every learner's hidden inputs, not by the luck of a draw."""
    assignment = catalogue
    checks = [c for c in grading.checks_for(assignment) if c.hidden]
    caught_by_luck = []
    for entry in mutants.catalogue(assignment):
        ns = corpus.fixture_namespace(assignment, entry.path)
        for check in checks:
            if entry.expected.bounds(check.id, check.points)[1] >= check.points:
                continue  # the file may earn all of this check's points
            for seed in range(1000, 1030):
                if corpus.grade(assignment, check.id, ns, seed).passed:
                    caught_by_luck.append((entry.name, check.id, seed))
                    break
    assert caught_by_luck == []


def _corpus_copy(tmp_path, monkeypatch, assignment):
    target = tmp_path / assignment
    shutil.copytree(corpus.HERE / assignment, target)
    monkeypatch.setattr(corpus, "HERE", tmp_path)
    return target


def _relabel(path, earns: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(f"# earns: {earns}\n" if line.startswith("# earns:") else line for line in lines))


def test_the_gate_names_a_surviving_mutant_a_failing_correct_file_and_a_missing_catalogue(tmp_path, monkeypatch):
    assignment = "hw3_queries_keys_values"
    folder = _corpus_copy(tmp_path, monkeypatch, assignment)
    # a correct answer declared a mistake survives; a mistake declared correct fails its full marks
    _relabel(folder / "correct_einsum.py", "nothing")
    full = " ".join(c.id for c in grading.checks_for(assignment))
    _relabel(folder / "swapped.py", full)
    found = mutants.refusals(assignment, secrets=mutants.SECRETS[1:2])
    assert [why.split(" earns")[0] for why in found] == [
        f"{assignment}: the mutant correct_einsum (no message named)",
        f"{assignment}: the correct swapped",
    ], found
    for path in folder.glob("*.py"):
        path.unlink()
    assert mutants.refusals(assignment, secrets=mutants.SECRETS[1:2]) == [
        f"{assignment} has no mutant: add its named mistakes to tests/fixtures/homework/{assignment}/ "
        "(or list it in nbgrader_tools.mutants.PENDING while they are written)"
    ]


def test_the_gate_names_a_hint_that_points_the_wrong_way(tmp_path, monkeypatch):
    """A message naming a usual mistake that its file does not make is refused under any secret,
    with the file and the mistake named: here a file's '# mistake:' lines taken away."""
    assignment = "hw3_queries_keys_values"
    folder = _corpus_copy(tmp_path, monkeypatch, assignment)
    path = folder / "k_times_q.py"
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True) if "# mistake:" not in line))
    secret = mutants.SECRETS[1]
    assert mutants.refusals(assignment, secrets=(secret,)) == [
        f"{assignment}: a message of k_times_q names transposed under {secret!r}, a mistake the file does not "
        "make (its '# mistake:' lines): the hint points the wrong way"
    ]


def test_the_release_writes_nothing_when_the_gate_refuses(tmp_path, monkeypatch):
    """./course release grades the catalogue on the new release, in-process, before it writes
    exercises/ (nbgrader's generate_assignment stands in as a copy of the committed release)."""
    assignment = "hw3_queries_keys_values"
    repo = tmp_path / "repo"
    for folder in ("solutions", "exercises"):
        shutil.copytree(corpus.REPO / folder / assignment, repo / folder / assignment)
    shutil.copy(corpus.REPO / "nbgrader_config.py", repo / "nbgrader_config.py")
    released = repo / "exercises" / assignment / f"{assignment}.ipynb"
    before = released.read_bytes()

    def generate(root, name):
        out = scratch_course.release_path(root, name)
        out.parent.mkdir(parents=True, exist_ok=True)
        nb = json.loads(before)
        nb["metadata"]["generated_here"] = True  # so that a write would show
        out.write_text(json.dumps(nb))
        return out

    monkeypatch.setattr(scratch_course, "REPO", repo)
    monkeypatch.setattr(scratch_course, "generate", generate)
    folder = _corpus_copy(tmp_path / "corpus", monkeypatch, assignment)
    _relabel(folder / "correct_einsum.py", "nothing")
    monkeypatch.setattr(mutants, "SECRETS", mutants.SECRETS[1:2])
    with pytest.raises(scratch_course.ReleaseRefused, match="the mutant correct_einsum"):
        scratch_course.release([assignment])
    assert released.read_bytes() == before
    _relabel(folder / "correct_einsum.py", " ".join(c.id for c in grading.checks_for(assignment)))
    assert scratch_course.release([assignment]) == [released]
    assert json.loads(released.read_text())["metadata"]["generated_here"] is True
