"""The cache key changes with every input that decides a raw score, and with nothing else.

Each input is changed in turn in a copy of the course (tests/course_copy.py),
and the key is read there by a fresh Python process that imports the copy's
packages; the limits, the sandbox settings and the installed versions are
changed in this process. Files that decide no score (a chapter, the README,
a test, another assignment's checks, the books, the late policy's code)
leave the key alone. Then the command line: after a change to ``lib``,
``./course grade`` stops before grading anything, names what changed and how
many saved results it would regrade, and regrades them with ``--regrade``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from course_copy import copy_course, env_for, run_in
from test_class_grading import needs_sandbox

from classgrader.assignments.course import load_assignment
from classgrader.pipeline import fingerprint
from classgrader.sandbox.limits import Limits
from classgrader.stages.grade import Settings
from devtools.sample_submissions import Builder

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"

# Reads the key after each change in turn, in one process that imports the copy's packages: the key
# hashes what the files hold when it is computed, so each change is made, read and put back.
READ_KEYS = """
import json, os, sys
from pathlib import Path
from classgrader.assignments.course import load_assignment
from classgrader.pipeline import fingerprint
from classgrader.stages.grade import Settings
keys = {}
for label, relative, text, secret in json.loads(sys.stdin.read()):
    os.environ["COURSE_GRADING_SECRET"] = secret
    path = Path.cwd() / relative if relative else None
    saved = path.read_bytes() if path else None
    try:
        if path:
            path.write_bytes(saved + text.encode())  # a blank line keeps a notebook JSON, a module Python
        fp = fingerprint.of(Path.cwd(), load_assignment(Path.cwd(), sys.argv[1]), Settings())
        keys[label] = {"key": fp.key, "inputs": fp.inputs}
    finally:
        if path:
            path.write_bytes(saved)
print(json.dumps(keys))
"""


#: Each input of the key -> a file whose change changes it.
CHANGES = {
    "grader": "classgrader/stages/scoring.py",
    "checks": "sdpa_course/grading/hw2.py",
    "lib": "sdpa_course/lib/softmax.py",
    "release": f"exercises/{ASSIGNMENT}/{NOTEBOOK}",
    "source": f"solutions/{ASSIGNMENT}/{NOTEBOOK}",
}
#: More files that decide a score -> the input they belong to.
MORE_CHANGES = {
    "sdpa_course/grading/authoring/weights.py": "checks",  # the checks' shared code, in a subpackage
    "classgrader/records.py": "grader",  # the recording code
    "classgrader/sandbox/driver.py": "grader",  # the program that runs the notebook in the sandbox
    "classgrader/stages/match.py": "grader",
    "sdpa_course/lib/blocked.py": "lib",
}
#: Files that decide no score of hw2.
UNRELATED = {
    "a chapter": "chapters/01_self_attention.md",
    "the README": "README.md",
    "a test": "tests/test_block.py",
    "another assignment's checks": "sdpa_course/grading/hw3.py",
    "the gradebook writer": "classgrader/books/gradebook.py",
    "the late policy's code": "classgrader/after_deadline/late.py",
    "the class run": "classgrader/pipeline/class_run.py",
}


def append(course: Path, relative: str, text: str) -> None:
    path = course / relative
    # a blank line keeps a notebook valid JSON and a module valid Python
    path.write_bytes(path.read_bytes() + text.encode())


SECRET = "test-secret"
CHANGE = "\n# changed\n"


def read_keys(course: Path, changes: list[tuple[str, str, str, str]]) -> dict[str, dict]:
    """The key after each (label, file, text appended, secret), each change put back before the next."""
    done = subprocess.run(
        [sys.executable, "-c", READ_KEYS, ASSIGNMENT],
        cwd=course,
        env=env_for(course),
        input=json.dumps(changes),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> dict[str, dict]:
    """The copy's key unchanged (``baseline``), after each change named above, and under another secret."""
    course = copy_course(tmp_path_factory.mktemp("fingerprint") / "course")
    changes = [("baseline", "", "", SECRET), ("another secret", "", "", "another-secret")]
    changes += [(name, rel, "\n" if name in ("release", "source") else CHANGE, SECRET) for name, rel in CHANGES.items()]
    changes += [(rel, rel, CHANGE, SECRET) for rel in [*MORE_CHANGES, *UNRELATED.values()]]
    return read_keys(course, changes)


def test_the_copy_has_the_repositorys_key(keys, monkeypatch):
    """The key hashes what the files hold, not where the course lies."""
    monkeypatch.setenv("COURSE_GRADING_SECRET", SECRET)
    here = fingerprint.of(REPO, load_assignment(REPO, ASSIGNMENT), Settings())
    assert set(keys["baseline"]["inputs"]) == set(fingerprint.INPUTS)
    assert keys["baseline"]["key"] == here.key


def _changed_inputs(keys: dict[str, dict], label: str) -> list[str]:
    return fingerprint.Fingerprint(keys[label]["inputs"]).changed_since(keys["baseline"]["inputs"])


@pytest.mark.parametrize("name", list(CHANGES))
def test_changing_an_input_changes_the_key_and_names_it(keys, name):
    assert keys[name]["key"] != keys["baseline"]["key"]
    assert _changed_inputs(keys, name) == [name]


@pytest.mark.parametrize("relative", list(MORE_CHANGES))
def test_other_code_that_decides_a_score_changes_the_key(keys, relative):
    assert _changed_inputs(keys, relative) == [MORE_CHANGES[relative]]


def test_another_secret_changes_the_key(keys):
    assert _changed_inputs(keys, "another secret") == ["secret"]


@pytest.mark.parametrize("what", list(UNRELATED))
def test_a_file_that_decides_no_score_leaves_the_key(keys, what):
    assert keys[UNRELATED[what]]["key"] == keys["baseline"]["key"]


@pytest.fixture(scope="module")
def info():
    return load_assignment(REPO, ASSIGNMENT)


@pytest.mark.parametrize(
    ("name", "settings"),
    [
        ("limits", Settings(limits=Limits(wall_seconds=61.0))),
        ("limits", Settings(limits=Limits(memory_bytes=1024**3))),
        ("sandbox", Settings(sandbox_mode="userns")),
        ("sandbox", Settings(sandboxed=False)),
        ("sandbox", Settings(kernel_record=False)),
    ],
)
def test_the_limits_and_sandbox_settings_change_the_key(info, name, settings):
    before = fingerprint.of(REPO, info, Settings())
    after = fingerprint.of(REPO, info, settings)
    assert after.changed_since(before.inputs) == [name]
    assert after.key != before.key


def test_the_worker_slots_uid_base_leaves_the_key(info):
    """Which uid a sandbox runs as decides no score."""
    before = fingerprint.of(REPO, info, Settings())
    assert fingerprint.of(REPO, info, dataclasses.replace(Settings(), uid_base=62000)).key == before.key


def test_another_version_of_a_pinned_package_changes_the_key(info, monkeypatch):
    before = fingerprint.of(REPO, info, Settings())
    versions = dict(fingerprint.installed_versions(tuple(fingerprint.pinned_names())))
    assert versions.get("numpy"), "numpy is pinned and installed"
    monkeypatch.setattr(fingerprint, "installed_versions", lambda names: {**versions, "numpy": "0.0.1"})
    after = fingerprint.of(REPO, info, Settings())
    assert after.changed_since(before.inputs) == ["environment"]


def named_inputs(said: str) -> list[str]:
    """The inputs a message says changed, each as often as it names it (by the words the grader uses for it)."""
    return [name for name, words in fingerprint.INPUTS.items() for _ in range(said.count(f"{words} changed"))]


def test_the_message_names_each_changed_input_once_and_results_graded_without_a_record(tmp_path):
    now = fingerprint.Fingerprint(dict.fromkeys(fingerprint.INPUTS, "a"))
    old = fingerprint.Fingerprint({**now.inputs, "lib": "b", "limits": "c"})
    fingerprint.write_record(tmp_path, old, [])
    said = fingerprint.stale_message(now, [old.key, old.key, "0123456789abcdef"], tmp_path, ASSIGNMENT)
    assert said.count("changed since") == 1
    assert named_inputs(said) == ["lib", "limits"]  # each once, and nothing that did not change
    assert "for 1 saved result" in said and str(tmp_path / "fingerprint.json") in said  # the record it lacks
    assert "3 saved results would be regraded" in said and "--regrade" in said


def test_the_record_keeps_the_earlier_keys_that_saved_results_still_carry(tmp_path):
    first = fingerprint.Fingerprint(dict.fromkeys(fingerprint.INPUTS, "a"))
    second = fingerprint.Fingerprint({**first.inputs, "lib": "b"})
    third = fingerprint.Fingerprint({**first.inputs, "lib": "c"})
    fingerprint.write_record(tmp_path, first, [])
    fingerprint.write_record(tmp_path, second, [first.key])
    assert set(fingerprint.read_record(tmp_path)) == {first.key, second.key}
    fingerprint.write_record(tmp_path, third, [second.key])  # no result carries the first key any more
    assert fingerprint.read_record(tmp_path) == {second.key: second.inputs, third.key: third.inputs}


# ---------------------------------------------------------------- the command line


def grade_in_copy(course: Path, *extra: str) -> tuple[int, str]:
    """``python -m classgrader`` on the copy's submitted/ folder into out/: (exit code, what it printed)."""
    done = run_in(
        course,
        ["-m", "classgrader", ASSIGNMENT, "submitted", "--out", "out", "--quiet", "-j", "2", "--no-kernel-record"]
        + list(extra),
        timeout=900,
    )
    return done.returncode, done.stdout + done.stderr


def _results(course: Path) -> dict[str, dict]:
    folder = course / "out" / "reports" / ASSIGNMENT / "results"
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


@needs_sandbox
def test_grade_names_a_change_to_lib_and_regrades_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADING_SECRET", "test-secret")
    course = copy_course(tmp_path / "course")
    builder = Builder(REPO, ASSIGNMENT)
    for student, fixture in (("ada", "solution"), ("bob", "blank")):
        name, data = builder.build(fixture)
        (course / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        (course / "submitted" / student / ASSIGNMENT / name).write_bytes(data)
    code, said = grade_in_copy(course)
    assert code == 0, said
    first = _results(course)
    assert {s: r["score"] for s, r in first.items()} == {"ada": 10, "bob": 0}
    record = json.loads((course / "out" / "reports" / ASSIGNMENT / "fingerprint.json").read_text())
    assert record["key"] == first["ada"]["key"].split("-")[1] and set(record["inputs"]) == set(fingerprint.INPUTS)

    append(course, "sdpa_course/lib/softmax.py", "\n# a mid-term fix\n")
    code, said = grade_in_copy(course)
    assert code == 2, said
    assert named_inputs(said) == ["lib"]  # only what changed is named
    assert "2 saved results would be regraded" in said and "--regrade" in said
    assert _results(course) == first, "nothing was graded or rewritten"

    code, said = grade_in_copy(course, "--regrade")
    assert code == 0, said
    again = _results(course)
    assert {s: r["score"] for s, r in again.items()} == {"ada": 10, "bob": 0}
    assert all(again[s]["key"] != first[s]["key"] and again[s]["graded_at"] != first[s]["graded_at"] for s in first)

    code, said = grade_in_copy(course)  # unchanged since: everything reused
    assert code == 0, said
    reused = re.search(r"(\d+) of (\d+) submissions already graded", said)
    assert reused and reused.groups() == ("2", "2"), said
    assert _results(course) == again
