"""The mutant catalogue: proof, before each release, that the checks catch the mistakes they name.

A mutant is a small change of a correct solution that makes one known mistake. The catalogue of
an assignment is the named mistakes of its learners' corpus (``tests/fixtures/homework/<name>/``):
every file whose ``# earns:`` line does not give all the points, ``calls_reference`` included, with
the message the learner should see (its ``# mistake:`` and ``# message:`` lines). The corpus's
correct files are the other side: each must earn full marks.

Each file is graded in-process (as the tests grade the corpus) as the student named after it
under each of :data:`SECRETS`, so that a mistake cannot pass for luck of one seed's hidden inputs.
:func:`refusals` lists what stops a release: a mutant earning full marks under a secret, a correct
file that does not, a message naming a usual mistake (a key of ``grading.all_hints()``) that
its file does not declare (a hint pointing the wrong way, under the hidden inputs of any secret), or
an assignment with no mutant at all. ``./course release`` refuses an
assignment with any (``nbgrader_tools.scratch_course.release``); ``tests/test_mutants.py`` holds
the same gate in the tests. It lives here, outside ``grading``: the checks ship in the learner
kit, a catalogue of mistakes must not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import corpus

#: The course secrets each file is graded under: the tests' own and two more.
SECRETS = (corpus.TEST_SECRET, "mutant-gate-secret-2", "mutant-gate-secret-3")

#: Assignments whose catalogue is still being written, by short name ("hw11"), with why: the gate
#: does not refuse them for having no mutant (it still grades any they have). Empty it as each
#: assignment's corpus of named mistakes arrives; a listed assignment that has mutants is reported.
PENDING: dict[str, str] = {}


@dataclass(frozen=True)
class Entry:
    """One corpus file: a mutant (a named mistake) or a correct solution."""

    assignment: str
    path: Path
    expected: corpus.Expected
    correct: bool

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def named(self) -> list[str]:
        """What its messages must name: mistake keys, then words."""
        keys = [f"{gid}: {key}" for gid, keys in self.expected.mistakes.items() for key in keys]
        words = [f"{gid}: {text}" for gid, texts in self.expected.messages.items() for text in texts]
        return keys + words


def short(assignment: str) -> str:
    return assignment.split("_")[0]


def entries(assignment: str) -> list[Entry]:
    """Every corpus file of ``assignment``, mutants and correct ones."""
    from sdpa_course import grading

    ids = {c.id for c in grading.checks_for(assignment)}
    out = []
    for _, path in corpus.fixtures(assignment):
        expected, _ = corpus.parse(path)
        out.append(Entry(assignment, path, expected, correct=expected.full == ids))
    return out


def catalogue(assignment: str) -> list[Entry]:
    """The mutants of ``assignment``: its corpus's named mistakes."""
    return [e for e in entries(assignment) if not e.correct]


@dataclass(frozen=True)
class Graded:
    """One corpus file graded under one course secret."""

    #: its points out of the assignment's total
    total: float
    #: the usual mistakes (keys of ``grading.all_hints()``) that any of its messages names
    named: frozenset[str]


def graded(
    entry: Entry, release: dict[str, Any] | None = None, secrets: tuple[str, ...] = SECRETS
) -> dict[str, Graded]:
    """The file graded under each of ``secrets`` (the visible checks do not depend on the secret: graded once)."""
    from sdpa_course import grading

    hints = grading.all_hints()

    def named(messages: list[str]) -> set[str]:
        return {key for key, phrase in hints.items() if any(phrase in m for m in messages)}

    checks = grading.checks_for(entry.assignment)
    ns = corpus.fixture_namespace(entry.assignment, entry.path, release)
    visible = [(c, corpus.grade(entry.assignment, c.id, ns)) for c in checks if not c.hidden]
    out = {}
    for secret in secrets:
        seed = corpus.student_seed(entry.assignment, entry.name, secret)
        verdicts = visible + [(c, corpus.grade(entry.assignment, c.id, ns, seed)) for c in checks if c.hidden]
        total = round(sum(c.score(v) for c, v in verdicts), 2)
        out[secret] = Graded(total, frozenset(named([v.message for _, v in verdicts])))
    return out


def full_marks(assignment: str) -> float:
    from sdpa_course import grading

    return float(sum(c.points for c in grading.checks_for(assignment)))


def refusals(assignment: str, release: dict[str, Any] | None = None, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    """Why ``assignment`` must not be released (empty: it may), graded under ``secrets`` on its
    release notebook (``exercises/``, or ``release``, a notebook not yet written there)."""
    full = full_marks(assignment)
    found = entries(assignment)
    mutants = [e for e in found if not e.correct]
    problems = []
    pending = PENDING.get(short(assignment))
    if not mutants and pending is None:
        problems.append(
            f"{assignment} has no mutant: add its named mistakes to tests/fixtures/homework/{assignment}/ "
            "(or list it in nbgrader_tools.mutants.PENDING while they are written)"
        )
    for entry in found:
        makes = {key for keys in entry.expected.mistakes.values() for key in keys}
        for secret, result in graded(entry, release, secrets).items():
            total = result.total
            stray = sorted(result.named - makes)
            if stray:
                problems.append(
                    f"{assignment}: a message of {entry.name} names {', '.join(stray)} under {secret!r}, "
                    "a mistake the file does not make (its '# mistake:' lines): the hint points the wrong way"
                )
            if entry.correct and total < full - 1e-9:
                problems.append(f"{assignment}: the correct {entry.name} earns {total:g} of {full:g} under {secret!r}")
            if not entry.correct and total >= full - 1e-9:
                problems.append(
                    f"{assignment}: the mutant {entry.name} ({'; '.join(entry.named) or 'no message named'}) "
                    f"earns full marks under {secret!r}: the checks do not catch it"
                )
    return problems
