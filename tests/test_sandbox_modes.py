"""The sandbox's two modes: built as root, or in a user namespace (bubblewrap's unprivileged mode).

The hostile and broken submissions of ``devtools.sample_submissions`` are
graded as root in the root mode (the class that ``tests/graded_class.py``
grades once for the whole run, where ``auto`` picks that mode) and as an
ordinary user (a spare uid, see ``tests/ordinary_user.py``), where only the
user-namespace mode can work and ``auto`` must pick it; ``./course test
--matrix`` grades them a third time, as root in the user-namespace mode. Every
run must give each submission its expected status and score, and the runs the
same statuses, cell scores and flags. Then: a fork bomb and a flood of output are contained in the
user-namespace mode as an ordinary user, the mode is named in the summary,
and when no sandbox can start the refusal names the reason (the sysctl, the
missing package).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.homework import submissions as corpus
from graded_class import ASSIGNMENT, LIMITS, REPO, WALL, graded_class, holding  # noqa: F401 (a fixture)
from ordinary_user import command as as_ordinary_user
from ordinary_user import home as ordinary_home
from sandbox_probes import assert_fork_bomb_and_flood_contained, assert_two_runs_share_nothing_but_the_imports

from classgrader import sandbox
from classgrader.pipeline.class_run import grade_class
from classgrader.sandbox import mode as sandbox_mode
from classgrader.stages.grade import Settings
from devtools.sample_submissions import EXPECTED, Builder

os.environ["COURSE_GRADING_SECRET"] = corpus.TEST_SECRET
IS_ROOT = os.geteuid() == 0

try:
    sandbox.check_available("userns")
    USERNS_PROBLEM = None
except sandbox.SandboxUnavailable as exc:
    USERNS_PROBLEM = str(exc)
needs_userns = pytest.mark.skipif(
    USERNS_PROBLEM is not None and not os.environ.get("CI"),
    reason=f"USER-NAMESPACE SANDBOX UNAVAILABLE ({USERNS_PROBLEM})",
)
needs_root = pytest.mark.skipif(not IS_ROOT, reason="root mode needs the tests to run as root (they do in CI)")


def quiet(*args, **kwargs):
    pass


def user_env(user_home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "HOME": str(user_home),
        "COURSE_GRADING_SECRET": corpus.TEST_SECRET,
    }


def run_as_user(argv: list[str], user_home: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        as_ordinary_user(argv, user_home),
        env=user_env(user_home),
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def results_of(out: Path) -> dict[str, dict]:
    """Each sample submission's result (a roster student who sent nothing left out)."""
    folder = out / "reports" / ASSIGNMENT / "results"
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json") if p.stem in EXPECTED}


def outcome(result: dict) -> tuple:
    """What must not depend on the sandbox mode: status, score, every cell's score, the flags."""
    return (result["status"], result["score"], {g: c["score"] for g, c in result["cells"].items()}, result["flagged"])


@pytest.fixture(scope="module")
def runs(request, graded_class) -> dict[str, dict]:  # noqa: F811
    """The whole class graded as root in the root mode (and with --matrix in the user-namespace mode)
    and as an ordinary user: {run name: {student: result}}."""
    builder = Builder(REPO, ASSIGNMENT)
    found = {}
    roots = []
    try:
        if IS_ROOT:
            assert graded_class["summary"]["sandbox"] == "root"
            with holding(graded_class["root"]):
                found["root, root mode"] = results_of(graded_class["root"])
            for mode in ("userns",) if request.config.getoption("--matrix") else ():
                root = ordinary_home()
                roots.append(root)
                submitted = builder.write_submitted(
                    root, EXPECTED, solutions=REPO / "solutions", gradebook=root / "gradebook.db", port=9
                )
                summary = grade_class(
                    REPO,
                    ASSIGNMENT,
                    submitted,
                    out=root,
                    workers=2,
                    settings=Settings(limits=LIMITS, sandbox_mode=mode),
                    progress=False,
                    log=quiet,
                    analyse=False,  # the item analysis is tested on its own (tests/test_item_analysis.py)
                )
                assert summary["sandbox"] == mode
                found[f"root, {mode} mode"] = results_of(root)
        user_home = ordinary_home()
        roots.append(user_home)
        out = user_home / "out"
        submitted = builder.write_submitted(
            user_home, EXPECTED, solutions=REPO / "solutions", gradebook=out / "gradebook.db", port=9
        )
        done = run_as_user(
            [
                sys.executable,
                "-m",
                "classgrader",
                ASSIGNMENT,
                str(submitted),
                "--course",
                str(REPO),
                "--out",
                str(out),
                "--workers",
                "2",
                "--timeout",
                str(WALL),
                "--memory",
                "512m",
                "--quiet",
            ],
            user_home,
            cwd=REPO,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "sandbox: userns (bubblewrap in an unprivileged user namespace" in done.stdout, done.stdout
        found["ordinary user, auto mode"] = results_of(out)
        yield found
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


@needs_userns
def test_every_run_gives_each_submission_its_expected_status_and_score(runs):
    for name, results in runs.items():
        assert set(results) == set(EXPECTED), name
        for student, (status, score) in EXPECTED.items():
            r = results[student]
            expected = {"full": r["max_score"], "zero": 0.0}[score]
            assert (r["status"], r["score"]) == (status, pytest.approx(expected)), (name, student, r["notes"])


@needs_userns
def test_the_modes_agree_on_every_status_cell_score_and_flag(runs):
    (first_name, first), *others = runs.items()
    assert first["patched_checker"]["flagged"], "the nbgrader-style record run should flag patched_checker"
    for name, results in others:
        for student in EXPECTED:
            assert outcome(results[student]) == outcome(first[student]), (student, first_name, name)


@needs_userns
def test_each_result_names_its_sandbox_mode(runs):
    for name, results in runs.items():
        want = "root" if name.endswith("root mode") else "userns"
        modes = {r["sandbox"].get("mode") for r in results.values() if r["sandbox"]}
        assert modes == {want}, name


def probe_as_ordinary_user(call: str) -> dict:
    """The facts ``sandbox_probes.<call>`` returns when an ordinary user runs it."""
    user_home = ordinary_home()
    try:
        code = (
            f"import json, sys; sys.path.insert(0, {str(REPO / 'tests')!r}); import sandbox_probes; "
            f"print(json.dumps(sandbox_probes.{call}))"
        )
        done = run_as_user([sys.executable, "-c", code], user_home, cwd=REPO)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(user_home, ignore_errors=True)


@needs_userns
def test_a_fork_bomb_and_a_flood_are_contained_for_an_ordinary_user():
    facts = probe_as_ordinary_user(f"fork_bomb_and_flood('auto', {WALL!r})")
    assert facts["mode"] == "userns"
    assert_fork_bomb_and_flood_contained(facts)


@pytest.mark.parametrize("mode", ["root", pytest.param("userns", marks=needs_userns)])
def test_a_submissions_two_runs_share_the_imports_and_nothing_else(mode):
    # One sandbox serves both runs of a submission: the scoring run must not see lib, and what it leaves
    # (a file, module state, a running process) must be gone when the record run gets lib.
    if mode == "root" and not IS_ROOT:
        pytest.skip("root mode needs the tests to run as root (they do in CI)")
    import sandbox_probes

    facts = sandbox_probes.two_runs_in_one_session(mode, WALL, str(REPO / "sdpa_course" / "lib"))
    assert facts["mode"] == mode
    assert_two_runs_share_nothing_but_the_imports(facts)


@needs_userns
def test_an_ordinary_users_two_runs_share_the_imports_and_nothing_else():
    facts = probe_as_ordinary_user(f"two_runs_in_one_session('auto', {WALL!r}, {str(REPO / 'sdpa_course' / 'lib')!r})")
    assert facts["mode"] == "userns"
    assert_two_runs_share_nothing_but_the_imports(facts)


@needs_root
def test_auto_picks_root_mode_as_root():
    assert sandbox.check_available() == "root"


@needs_userns
def test_an_ordinary_user_is_refused_the_root_mode_with_a_reason():
    user_home = ordinary_home()
    try:
        done = run_as_user(
            [
                sys.executable,
                "-m",
                "classgrader",
                ASSIGNMENT,
                str(user_home),
                "--course",
                str(REPO),
                "--out",
                str(user_home / "out"),
                "--sandbox",
                "root",
            ],
            user_home,
            cwd=REPO,
        )
    finally:
        shutil.rmtree(user_home, ignore_errors=True)
    assert done.returncode == 2
    assert "no sandbox can start here" in done.stderr and "the root mode needs root" in done.stderr, done.stderr


@needs_userns
def test_where_no_user_namespace_can_be_made_the_grader_refuses_and_says_why():
    """Inside a user namespace that may not nest another (as in a locked-down container), nothing is graded."""
    user_home = ordinary_home()
    try:
        argv = [
            "bwrap",
            "--unshare-user",
            "--disable-userns",
            "--dev-bind",
            "/",
            "/",
            "--",
            sys.executable,
            "-m",
            "classgrader",
            ASSIGNMENT,
            str(user_home),
            "--course",
            str(REPO),
            "--out",
            str(user_home / "out"),
        ]
        done = run_as_user(argv, user_home, cwd=REPO)
    finally:
        shutil.rmtree(user_home, ignore_errors=True)
    assert done.returncode == 2, done.stderr
    err = done.stderr
    assert "no sandbox can start here" in err and "userns mode: bwrap failed" in err, err
    assert "--no-sandbox" in err and not (user_home / "out" / "gradebook.db").exists()


@pytest.mark.parametrize(
    "setting, value, allowed",
    [
        ("kernel/unprivileged_userns_clone", "0", "1"),
        ("user/max_user_namespaces", "0", "15000"),
        ("kernel/apparmor_restrict_unprivileged_userns", "1", "0"),
    ],
)
def test_the_refusal_names_the_sysctl_that_forbids_user_namespaces(tmp_path, setting, value, allowed):
    path = tmp_path / setting
    path.parent.mkdir(parents=True)
    path.write_text(allowed + "\n")
    assert sandbox_mode.userns_blockers(tmp_path) == []
    path.write_text(value + "\n")
    (found,) = sandbox_mode.userns_blockers(tmp_path)
    name = setting.replace("/", ".")
    assert f"{name} is {value}" in found and f"sysctl -w {name}=" in found


def test_a_missing_bubblewrap_is_named_with_its_package(tmp_path, monkeypatch):
    for tool in ("setpriv", "prlimit"):  # util-linux present, bubblewrap not
        found = shutil.which(tool)
        if found:
            (tmp_path / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(tmp_path))
    for mode in sandbox_mode.MODES:
        problem = sandbox_mode.probe(mode)
        assert problem is not None and "bwrap" in problem and "apt-get install bubblewrap" in problem, problem
