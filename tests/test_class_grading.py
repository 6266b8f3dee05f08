"""Grading a whole class (classgrader): bad submissions, sandbox, gradebook, restarts.

One class of bad submissions of hw2 (made by
``devtools/sample_submissions/builder.py`` from the committed notebooks) is
graded once per test session; the tests then check each submission's status
and score, the gradebook, the reports, that no solution text and no hidden
test leaked, and that the network was out of reach. Other tests interrupt a
run and resume it, grade a zip as an LMS exports it, and use PostgreSQL.

Time limits are short (10 s wall per submission) to keep the suite quick.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from fixtures.homework import submissions as corpus
from graded_class import ASSIGNMENT, LIMITS, REPO, WALL, graded_class, holding, quiet  # noqa: F401 (a fixture)
from notebook_lines import hidden_test_lines as notebook_hidden_lines
from sandbox_probes import assert_fork_bomb_and_flood_contained, fork_bomb_and_flood

from classgrader import sandbox
from classgrader.books import gradebook
from classgrader.pipeline import intake
from classgrader.pipeline.class_run import grade_class
from classgrader.stages import notebooks
from classgrader.stages.grade import Settings
from devtools.sample_submissions import EXPECTED, Builder
from nbgrader_tools.cells import nbgrader_meta
from sdpa_course import grading

# A notebook's own cells are stopped at their share of the wall-clock limit (the
# checks get the rest); how long the stop itself takes depends on how busy the
# machine is, so the upper bound is loose: it tells a stopped run from one that
# ran on to the end of the class's own timeout.
CELLS_STOPPED_AT = LIMITS.wall_seconds * LIMITS.cell_share
STOPPED_BY = 3 * WALL

try:
    sandbox.check_available()
    SANDBOX_PROBLEM = None
except sandbox.SandboxUnavailable as exc:
    SANDBOX_PROBLEM = str(exc)
# As root both sandbox modes run (tests/test_sandbox_modes.py also runs the user-namespace mode as an ordinary user).
SANDBOX_MODES = ["root", "userns"] if os.geteuid() == 0 else ["userns"]

# On a developer's machine without bubblewrap (or not root) these tests skip,
# loudly; in CI (.ci/run sets CI=true and installs it) they must run, so there
# a missing sandbox fails them instead.
IN_CI = bool(os.environ.get("CI"))
needs_sandbox = pytest.mark.skipif(
    SANDBOX_PROBLEM is not None and not IN_CI,
    reason=f"CLASS GRADING SANDBOX UNAVAILABLE ({SANDBOX_PROBLEM}); .ci/run installs bubblewrap",
)


def _skip_unless_ci(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI must run this test)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def builder() -> Builder:
    return Builder(REPO, ASSIGNMENT)


@pytest.fixture(scope="module")
def graded(graded_class):  # noqa: F811
    """Every fixture of EXPECTED graded once (for the whole run: tests/graded_class.py), plus a roster
    student who sent nothing."""
    root = graded_class["root"]
    with holding(root):
        results = {
            p.stem: json.loads(p.read_text()) for p in (root / "reports" / ASSIGNMENT / "results").glob("*.json")
        }
    return {**graded_class, "results": results}


def gradebook_scores(url: str) -> dict[str, dict[str, float | None]]:
    with gradebook.open_gradebook(url, "sdpa-course") as gb:
        return gradebook.cell_scores(gb, ASSIGNMENT, auto=True)


def solution_only_lines(builder: Builder) -> list[str]:
    """Lines of the instructor's answers that the release does not show."""
    release_text = "\n".join(c.source for c in builder.release.cells)
    lines = []
    for cell in builder.source.cells:
        if nbgrader_meta(cell).get("solution"):
            for line in cell.source.splitlines():
                s = line.strip()
                if len(s) > 12 and "###" not in s and s not in release_text:
                    lines.append(s)
    assert lines, "the solution should have lines the release does not show"
    return lines


def hidden_test_lines(builder: Builder) -> list[str]:
    lines = notebook_hidden_lines(builder.source)
    assert lines, "hw2 should have hidden tests"
    return lines


# ---------------------------------------------------------------- every bad submission


@needs_sandbox
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_submission_gets_its_expected_status_and_score(graded, name):
    status, score = EXPECTED[name]
    result = graded["results"][name]
    assert result["status"] == status, (name, result["status"], result["notes"])
    expected = {"full": result["max_score"], "zero": 0.0}[score]
    assert result["score"] == pytest.approx(expected), (name, result["cells"])
    assert result["max_score"] == 10


@needs_sandbox
def test_a_student_without_a_submission_is_missing_with_zero(graded):
    result = graded["results"]["absent_student"]
    assert result["status"] == "missing" and result["score"] == 0
    assert "absent_student" not in gradebook_scores(f"sqlite:///{graded['root'] / 'gradebook.db'}")


@needs_sandbox
def test_in_kernel_pass_but_outside_failure_is_flagged(graded):
    """Only evidence of tampering flags: the same inputs in both runs, and a
    higher in-kernel score (here the notebook replaced the in-kernel check)."""
    flagged = {name for name, r in graded["results"].items() if r["flagged"]}
    assert flagged == {"patched_checker"}
    assert graded["results"]["patched_checker"]["in_kernel"]["softmax_basic"] == "passed"
    assert graded["summary"]["flagged"] == ["patched_checker"]


@needs_sandbox
def test_the_gradebook_holds_exactly_the_outside_scores(graded):
    """Including after a submission tried to write the gradebook itself."""
    scores = gradebook_scores(f"sqlite:///{graded['root'] / 'gradebook.db'}")
    results = graded["results"]
    assert set(scores) == {n for n, r in results.items() if r["status"] != "missing"}
    for student, cells in scores.items():
        assert cells == {gid: c["score"] for gid, c in results[student]["cells"].items()}, student
    assert all(v is not None and v <= 4 for cells in scores.values() for v in cells.values())
    out = autograded_text(graded, "writes_gradebook")
    assert "could not write" in out and "wrote " not in out.replace("could not write", "")


def autograded_text(graded, student: str) -> str:
    path = graded["root"] / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(path, as_version=4)
    return "\n".join(o.get("text", "") + o.get("evalue", "") for c in nb.cells for o in c.get("outputs", []))


@needs_sandbox
def test_time_limits_hold(graded):
    for name in ("infinite_loop", "endless_printing"):
        sb = graded["results"][name]["sandbox"]
        assert CELLS_STOPPED_AT <= sb["seconds"] < STOPPED_BY, (name, sb)
    slowest = max(r["sandbox"].get("seconds") or 0 for r in graded["results"].values())
    assert slowest < STOPPED_BY


@needs_sandbox
def test_endless_output_is_bounded(graded):
    result_file = graded["root"] / "reports" / ASSIGNMENT / "results" / "endless_printing.json"
    assert result_file.stat().st_size < 100_000
    nb_file = graded["root"] / "autograded" / "endless_printing" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert nb_file.stat().st_size < 200_000
    text = autograded_text(graded, "endless_printing")
    assert "more characters of output not kept" in text
    assert len(graded["results"]["endless_printing"]["sandbox"]["log"]) <= LIMITS.log_bytes


@needs_sandbox
def test_kernel_death_and_memory_are_recorded_and_the_rest_graded(graded):
    os_exit = graded["results"]["os_exit"]
    assert os_exit["sandbox"]["returncode"] == 3
    assert any("exit status 3" in n for n in os_exit["notes"])
    bomb = graded["results"]["memory_bomb"]
    assert any("ran out of memory" in n for n in bomb["notes"])
    assert graded["summary"]["statuses"]["graded"] >= 8


@needs_sandbox
def test_the_network_is_out_of_reach(graded):
    assert graded["accepted"] == 0
    text = autograded_text(graded, "network")
    assert "no connection to 127.0.0.1" in text and "connected to" not in text.replace("no connection to", "")


@needs_sandbox
def test_solutions_cannot_be_read_and_nothing_leaks(graded, builder):
    text = autograded_text(graded, "reads_solutions")
    assert "found: []" in text
    secret = solution_only_lines(builder) + hidden_test_lines(builder)
    root = graded["root"]
    for name in ("reads_solutions", "blank", "calls_reference"):
        files = [
            root / "reports" / ASSIGNMENT / "results" / f"{name}.json",
            root / "autograded" / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
            root / "feedback" / name / ASSIGNMENT / f"{ASSIGNMENT}.html",
        ]
        for path in files:
            content = path.read_text()
            for line in secret:
                assert line not in content, (path, line)


@needs_sandbox
def test_feedback_pages_show_scores_but_no_hidden_tests(graded, builder):
    hidden = hidden_test_lines(builder)
    pages = sorted((graded["root"] / "feedback").glob(f"*/{ASSIGNMENT}/*.html"))
    # One page per submission; none for a student who sent nothing (nbgrader's release_feedback
    # would stop at a page with no submission behind it).
    assert len(pages) == len([r for r in graded["results"].values() if r["status"] != "missing"])
    assert not (graded["root"] / "feedback" / "absent_student").exists()
    for page in pages:
        html = page.read_text()
        assert "BEGIN HIDDEN TESTS" not in html
        assert not any(line in html for line in hidden), page
    solution = (graded["root"] / "feedback" / "solution" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    hidden = re.search(r"<strong>softmax_hidden</strong>: ([\d.]+) / ([\d.]+) points", solution)
    assert "Score: 10 / 10" in solution and hidden and hidden.groups() == ("4", "4"), hidden
    blank = (graded["root"] / "feedback" / "blank" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "Score: 0 / 10" in blank and "NotImplementedError" in blank


@needs_sandbox
def test_reports_csv_summary_and_histogram(graded):
    reports = graded["root"] / "reports" / ASSIGNMENT
    rows = (reports / "student_scores.csv").read_text().splitlines()
    assert rows[0] == (
        "student_id,name,score,max_score,percent,status,flagged,raw_score,late_penalty,submitted_at,late,extension,notes"
    )
    by_id = {r.split(",")[0]: r.split(",") for r in rows[1:]}
    assert set(by_id) == set(graded["results"])
    assert by_id["solution"][2:6] == ["10", "10", "100.0", "graded"]
    assert by_id["absent_student"][2:6] == ["0", "10", "0.0", "missing"]
    summary = json.loads((reports / "summary.json").read_text())
    expected_counts = {}
    for status, _ in list(EXPECTED.values()) + [("missing", "zero")]:
        expected_counts[status] = expected_counts.get(status, 0) + 1
    assert summary["statuses"] == expected_counts
    png = (reports / "histogram.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert f"{ASSIGNMENT}: scores of 20 submissions (1 missing)".encode() in png


@needs_sandbox
def test_running_again_changes_nothing(graded):
    """Idempotent: every unchanged submission is skipped; the gradebook stays the same."""
    with holding(graded["root"]):  # no other worker reads the class while this one writes it
        url = f"sqlite:///{graded['root'] / 'gradebook.db'}"
        before = gradebook_scores(url)
        stamps = {n: r.get("graded_at") for n, r in graded["results"].items()}
        said: list[str] = []
        again = grade_class(
            REPO,
            ASSIGNMENT,
            graded["submitted"],
            out=graded["root"],
            workers=2,
            settings=Settings(limits=LIMITS),
            roster=["absent_student"],
            progress=False,
            log=said.append,
        )
        submitted = [n for n, r in graded["results"].items() if r["status"] != "missing"]
        # every submission reused; only the roster's absent student is recorded again (missing)
        assert (again.reused, again.graded) == (len(submitted), len(graded["results"]) - len(submitted)), again
        counted = [re.findall(r"\d+", m)[:3] for m in said if "already graded" in m]
        # the absent student is not counted among those to grade
        assert counted == [[str(len(submitted)), str(len(submitted)), "0"]], said
        assert gradebook_scores(url) == before
        results = graded["root"] / "reports" / ASSIGNMENT / "results"
        after = {p.stem: json.loads(p.read_text()).get("graded_at") for p in results.glob("*.json")}
        assert {n: s for n, s in after.items() if n != "absent_student"} == {
            n: s for n, s in stamps.items() if n != "absent_student"
        }


@needs_sandbox
def test_nbgrader_export_and_feedback_read_our_gradebook(graded, builder):
    """nbgrader's own export and generate_feedback work on what the grader wrote."""
    with holding(graded["root"]):  # no other worker reads the class while this one writes it
        root = graded["root"]
        from nbgrader_tools.scratch_course import run_nbgrader_batch

        shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
        db = f"--db=sqlite:///{root / 'gradebook.db'}"
        run_nbgrader_batch(
            [
                ["export", db, f"--to={root / 'nbgrader.csv'}"],
                [
                    "generate_feedback",
                    ASSIGNMENT,
                    "--student=blank",
                    "--force",
                    db,
                    "--CourseDirectory.feedback_directory=nbgrader_feedback",
                ],
            ],
            cwd=root,
        )
        rows = (root / "nbgrader.csv").read_text().splitlines()
        header = rows[0].split(",")
        score = {r.split(",")[header.index("student_id")]: float(r.split(",")[header.index("score")]) for r in rows[1:]}
        assert score["solution"] == 10 and score["patched_checker"] == 0 and score["stripped_metadata"] == 10
        html = (root / "nbgrader_feedback" / "blank" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
        assert "Score: 0.0" in html or "0.0 / 10.0" in html
        assert not any(line in html for line in hidden_test_lines(builder))


@needs_sandbox
def test_each_environment_assignment_grades_its_solution_full_and_its_release_zero(tmp_path, environment_assignments):
    """The same pipeline on the chosen homework (every one with --matrix),
    with a notebook saved without nbgrader's metadata."""
    for assignment in environment_assignments:
        b = Builder(REPO, assignment)
        root = tmp_path / assignment
        submitted = b.write_submitted(root, ["solution", "blank", "stripped_metadata"])
        grade_class(
            REPO,
            assignment,
            submitted,
            out=root,
            workers=2,
            settings=Settings(limits=LIMITS, kernel_record=False),
            progress=False,
            log=quiet,
            analyse=False,  # the item analysis is tested on its own (tests/test_item_analysis.py)
        )
        results = {
            p.stem: json.loads(p.read_text()) for p in (root / "reports" / assignment / "results").glob("*.json")
        }
        got = {name: (r["status"], r["score"]) for name, r in results.items()}
        assert got == {
            "solution": ("graded", 10.0),
            "blank": ("graded", 0.0),
            "stripped_metadata": ("metadata_stripped", 10.0),
        }, (assignment, got)


def _grade_corpus(assignment: str, root: Path, submitted: Path, regrade: bool) -> dict[str, dict]:
    # The first run keeps the nbgrader-style record (flags); the regrade scores only, to save time.
    grade_class(
        REPO,
        assignment,
        submitted,
        out=root,
        workers=2,
        settings=Settings(limits=LIMITS, kernel_record=not regrade),
        regrade=regrade,
        progress=False,
        log=quiet,
        analyse=False,  # the item analysis is tested on its own (tests/test_item_analysis.py)
    )
    folder = root / "reports" / assignment / "results"
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}


@needs_sandbox
@pytest.mark.matrix
@pytest.mark.parametrize("assignment", corpus.ASSIGNMENTS)
def test_the_corpus_gets_the_same_scores_twice_and_no_flag(tmp_path, assignment):
    """Every learners'-corpus file, graded with the class grader and
    regraded (--regrade), gets the same points per cell both times, within what
    its fixture says and equal to the in-process grading of the same student;
    the nbgrader-style record run sees the same inputs, so no honest file is flagged."""
    submitted = tmp_path / "submitted"
    files = corpus.fixtures(assignment)
    for _, path in files:
        _, cells = corpus.parse(path)
        target = submitted / path.stem / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(corpus.submission(assignment, cells)))
    first = _grade_corpus(assignment, tmp_path / "out", submitted, regrade=False)
    again = _grade_corpus(assignment, tmp_path / "out", submitted, regrade=True)
    checks = {c.id: c for c in grading.checks_for(assignment)}
    assert set(first) == {p.stem for _, p in files}
    for _, path in files:
        expected, _ = corpus.parse(path)
        a, b = first[path.stem], again[path.stem]
        scores = {gid: c["score"] for gid, c in a["cells"].items()}
        assert scores == {gid: c["score"] for gid, c in b["cells"].items()}, path.stem
        assert a["seed"] == b["seed"] == corpus.student_seed(assignment, path.stem)
        assert a["flagged"] == b["flagged"] == [], (path.stem, a["in_kernel"], a["cells"])
        assert set(a["in_kernel"]) == set(checks), path.stem  # the record run did run
        verdicts = corpus.corpus_verdicts(assignment, path)
        assert scores == {cid: checks[cid].score(v) for cid, v in verdicts.items()}, path.stem
        for gid, score in scores.items():
            lo, hi = expected.bounds(gid, checks[gid].points)
            assert lo - 1e-9 <= score <= hi + 1e-9, (path.stem, gid, score)
        for gid, words in expected.messages.items():
            assert all(w in a["cells"][gid]["message"] for w in words), (path.stem, gid, a["cells"][gid])


# ---------------------------------------------------------------- the sandbox itself


@needs_sandbox
@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_the_sandbox_is_an_unprivileged_empty_world(mode):
    probe = "\n".join(
        [
            "import os, json",
            "status = open('/proc/self/status').read()",
            "caps = [l for l in status.splitlines() if l.startswith(('CapEff', 'CapBnd', 'NoNewPrivs'))]",
            "print(json.dumps({'uid': os.getuid(), 'gid': os.getgid(), 'caps': caps, 'root': sorted(os.listdir('/')),",
            "  'pids': sorted(p for p in os.listdir('/proc') if p.isdigit()),",
            f"  'repo': os.path.exists({str(REPO / 'solutions')!r}),"
            f" 'venv_lib': os.path.exists({str(REPO / 'sdpa_course' / 'lib')!r})}}))",
            "try:\n    open('/usr/evil', 'w')\nexcept OSError as e:\n    print('usr', type(e).__name__)",
            "try:\n    open('/tmp/big', 'wb').write(b'x' * (100 * 1024 * 1024))\n"
            "except OSError as e:\n    print('tmp', type(e).__name__)",
        ]
    )
    outcome = sandbox.run(
        {"cells": [{"n": 0, "source": probe, "role": "extra"}], "checks": []},
        {"driver.py": sandbox.DRIVER},
        LIMITS,
        uid=61123,
        mode=mode,
    )
    assert outcome.mode == mode
    cell = next(e for e in outcome.events if e.get("event") == "cell")
    first, *rest = cell["stdout"].splitlines()
    facts = json.loads(first)
    assert facts["uid"] == 61123 and facts["gid"] == 61123
    assert "CapEff:\t0000000000000000" in facts["caps"] and "CapBnd:\t0000000000000000" in facts["caps"]
    assert "NoNewPrivs:\t1" in facts["caps"]
    assert not facts["repo"] and not facts["venv_lib"]
    assert len(facts["pids"]) <= 3  # bwrap's init, python, nothing of the host
    assert "home" not in facts["root"] and "etc" not in facts["root"]
    assert rest == ["usr OSError", "tmp OSError"]


@needs_sandbox
@pytest.mark.parametrize("mode", SANDBOX_MODES[:1])
def test_a_flood_of_results_and_a_fork_bomb_are_contained(mode):
    """Writing past the result cap ends the run; forking stops at the process limit.

    (The kernel never counts uid 0's processes against the limit, even in a
    user namespace: the user-namespace mode is checked as an ordinary user, in
    tests/test_sandbox_modes.py.)
    """
    facts = fork_bomb_and_flood(mode, WALL)
    assert facts["mode"] == mode
    assert_fork_bomb_and_flood_contained(facts)


# ---------------------------------------------------------------- interrupt and resume


def _interruptible() -> None:
    """In the child before it starts: Ctrl+C's default action, as in a terminal. A test run started in
    the background (``cmd &`` in a script) ignores SIGINT, every child inherits that, and Python
    then installs no KeyboardInterrupt handler: the run would ignore the interrupt and finish."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@needs_sandbox
def test_an_interrupted_run_resumes_without_losing_or_doubling_grades(tmp_path, builder):
    students = [f"s{i}" for i in range(5)]
    slow = builder.with_cell_after_answer("import time\ntime.sleep(0.6)")
    for sid in students:
        folder = tmp_path / "submitted" / sid / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(slow, folder / f"{ASSIGNMENT}.ipynb")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "classgrader",
        ASSIGNMENT,
        str(tmp_path / "submitted"),
        "--course",
        str(REPO),
        "--out",
        str(out),
        "--workers",
        "1",
        "--timeout",
        str(WALL),
        "--memory",
        "512m",
        "--quiet",
        "--no-kernel-record",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible)
    results = out / "reports" / ASSIGNMENT / "results"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(results.glob("*.json"))) < 2 and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    done_first = {p.stem: json.loads(p.read_text())["graded_at"] for p in results.glob("*.json")}
    assert 1 <= len(done_first) < len(students)
    url = f"sqlite:///{out / 'gradebook.db'}"
    assert set(gradebook_scores(url)) <= set(done_first)

    summary = grade_class(
        REPO,
        ASSIGNMENT,
        tmp_path / "submitted",
        out=out,
        workers=2,
        settings=Settings(limits=LIMITS, kernel_record=False),
        progress=False,
        log=quiet,
    )
    assert summary["statuses"] == {"graded": 5}
    done = {p.stem: json.loads(p.read_text()) for p in results.glob("*.json")}
    assert set(done) == set(students)
    for sid, stamp in done_first.items():
        assert done[sid]["graded_at"] == stamp, "graded twice"
    scores = gradebook_scores(url)
    assert set(scores) == set(students)
    assert all(sum(cells.values()) == 10 for cells in scores.values())
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id="sdpa-course") as gb:
        assert len(gb.assignment_submissions(ASSIGNMENT)) == 5
        assert gb.db.query(__import__("nbgrader").api.Grade).count() == 5 * 4


# ---------------------------------------------------------------- LMS exports


def test_lms_file_names_give_student_ids():
    assert intake.parse_name("smithjane_12345_678901_hw2_stable_softmax.ipynb")[:3:2] == (
        "12345",
        "hw2_stable_softmax.ipynb",
    )
    assert intake.parse_name("doejohn_LATE_222_333_hw2_stable_softmax-1.ipynb")[0] == "222"
    assert intake.parse_name("Jane Smith_4567_assignsubmission_file_hw2.ipynb")[:2] == ("4567", "Jane Smith")
    assert intake.parse_name("Homework 2_jsmith_attempt_2024-03-01-10-20-30_hw2_stable_softmax.ipynb")[0] == "jsmith"
    assert intake.parse_name("ada.lovelace__my homework.ipynb")[:3:2] == ("ada.lovelace", "my homework.ipynb")
    assert intake.parse_name("plainname.ipynb") is None
    assert intake.safe_id("Jane Smith/..") == "Jane_Smith"


def test_a_zip_cannot_write_outside_its_folder(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../evil.ipynb", "{}")
        zf.writestr("/abs/evil2.ipynb", "{}")
        zf.writestr("__MACOSX/._a_1_2_x.ipynb", "{}")
        zf.writestr("ok_1_2_hw2_stable_softmax.ipynb", "{}")
    dest = intake.extract_zip(archive, tmp_path / "out")
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert files == ["ok_1_2_hw2_stable_softmax.ipynb"]
    assert not (tmp_path.parent / "evil.ipynb").exists()


@needs_sandbox
def test_a_zip_from_an_lms_is_graded(tmp_path, builder):
    _, good = builder.build("solution")
    _, blank = builder.build("blank")
    archive = tmp_path / "canvas.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("smithjane_101_9001_hw2_stable_softmax.ipynb", good)
        zf.writestr("doejohn_LATE_102_9002_hw2_stable_softmax-1.ipynb", blank)
        zf.writestr("Ada Lovelace_103_assignsubmission_file_/my_softmax.ipynb", good)
        zf.writestr("turing_104_9004_homework.pdf", b"%PDF-1.4 not a notebook")
    out = tmp_path / "out"
    grade_class(
        REPO,
        ASSIGNMENT,
        archive,
        out=out,
        workers=2,
        settings=Settings(limits=LIMITS, kernel_record=False),
        progress=False,
        log=quiet,
    )
    results = {p.stem: json.loads(p.read_text()) for p in (out / "reports" / ASSIGNMENT / "results").glob("*.json")}
    assert {k: (v["status"], v["score"]) for k, v in results.items()} == {
        "101": ("graded", 10.0),
        "102": ("graded", 0.0),
        "103": ("renamed", 10.0),
        "104": ("not_a_notebook", 0.0),
    }
    assert results["101"]["display_name"] == "smithjane"


# ---------------------------------------------------------------- matching cells without metadata


def test_matching_restores_release_cells_and_keeps_the_learners_own(builder):
    _, data = builder.build("stripped_metadata")
    learner = notebooks.load(data)
    learner.cells.insert(builder.answer_index + 1, nbformat.v4.new_code_cell("def helper():\n    return 1"))
    del learner.cells[1]  # the locked setup cell, gone
    plan = notebooks.match(learner, builder.release)
    assert plan.metadata_stripped
    roles = [(c.role, c.grade_id) for c in plan.cells if c.cell_type == "code"]
    release_tests = [nbgrader_meta(c)["grade_id"] for c in builder.release.cells if notebooks.release_role(c) == "test"]
    assert [gid for role, gid in roles if role == "test"] == release_tests
    assert ("setup", "setup") in roles  # restored from the release
    answer = next(c for c in plan.cells if c.role == "answer")
    assert f"def {builder.function}" in answer.source and "NotImplementedError" not in answer.source
    extra = [c for c in plan.cells if c.role == "extra"]
    assert [c.source for c in extra] == ["def helper():\n    return 1"]


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "not valid JSON"),
        (b"[1, 2]", "not a Jupyter notebook"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"cells": "no"}', "not a Jupyter notebook"),
    ],
)
def test_unreadable_files_are_named_as_such(data, reason):
    with pytest.raises(notebooks.NotANotebook, match=reason):
        notebooks.load(data, "x.ipynb")


# ---------------------------------------------------------------- PostgreSQL


def _postgres_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return candidates[-1].parent if candidates else None


@pytest.fixture
def postgres():
    """A throw-away PostgreSQL server on 127.0.0.1, run as the unprivileged postgres user."""
    bindir = _postgres_bin()
    if bindir is None:
        _skip_unless_ci(
            "POSTGRESQL IS NOT INSTALLED: the PostgreSQL gradebook test did not run "
            "(apt-get install postgresql; .ci/run installs it)"
        )
    import pwd

    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        _skip_unless_ci("POSTGRESQL: no 'postgres' system user to run the server as")
    root = Path(tempfile.mkdtemp(prefix="classgrader-pg-"))  # under /tmp: the postgres user must reach it
    os.chown(root, user.pw_uid, user.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = root / "data"
    subprocess.run(
        as_pg + [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    opts = f"-k {root} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        as_pg + [str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start"],
        check=True,
        capture_output=True,
    )
    try:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True) as c:
            c.execute("CREATE DATABASE gradebook")
        yield f"postgresql://postgres@127.0.0.1:{port}/gradebook"
    finally:
        subprocess.run(
            as_pg + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


@needs_sandbox
def test_a_postgresql_gradebook(tmp_path, builder, postgres):
    submitted = builder.write_submitted(tmp_path, ["solution", "blank", "patched_checker", "truncated_json"])
    settings = Settings(limits=LIMITS)
    grade_class(
        REPO,
        ASSIGNMENT,
        submitted,
        out=tmp_path,
        db_url=postgres,
        workers=2,
        settings=settings,
        progress=False,
        log=quiet,
    )
    url = postgres.replace("postgresql://", "postgresql+psycopg://")
    scores = {s: sum(c.values()) for s, c in gradebook_scores(url).items()}
    assert scores == {"solution": 10, "blank": 0, "patched_checker": 0, "truncated_json": 0}
    assert not (tmp_path / "gradebook.db").exists()
    messages = []
    grade_class(
        REPO,
        ASSIGNMENT,
        submitted,
        out=tmp_path,
        db_url=postgres,
        workers=2,
        settings=settings,
        progress=False,
        log=messages.append,
    )
    assert any("4 of 4 submissions already graded" in m for m in messages)
    assert {s: sum(c.values()) for s, c in gradebook_scores(url).items()} == scores
