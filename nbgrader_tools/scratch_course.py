"""Run nbgrader on the course's homework in a scratch course folder.

The tests and the benchmark use these helpers to generate releases,
autograde submissions and read scores from the gradebook without writing
into the repository; :func:`release` regenerates ``exercises/`` after a
source notebook in ``solutions/`` changed (``python -m nbgrader_tools
release``, see :mod:`nbgrader_tools.__main__`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIMING_PREFIX = "nbgrader-batch-seconds: "


def nbgrader_env() -> dict[str, str]:
    """The environment for nbgrader subprocesses.

    nbgrader calls ``alembic`` from PATH on its first gradebook creation, and
    its kernels must import ``grading`` and ``lib``: so the interpreter's own
    bin folder goes first on PATH and the repository on PYTHONPATH.
    """
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def run_nbgrader(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run ``nbgrader <args>`` in ``cwd``; raise with its output if it fails."""
    cmd = [sys.executable, "-m", "nbgrader", *args]
    done = subprocess.run(cmd, cwd=cwd, env=nbgrader_env(), capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def run_nbgrader_batch(commands: list[list[str]], cwd: Path, timeout: float = 1800) -> str:
    """Run several nbgrader commands in one fresh Python process (in ``cwd``).

    The way nbgrader's own test suite runs its apps (``initialize``,
    ``start``, ``reset``), so that the import of nbgrader and the start-up are
    paid once rather than once per command. Raises if any command fails.
    """
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader_tools", "batch", json.dumps(commands)],
        cwd=cwd,
        env=nbgrader_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader {commands} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def run_app(args: list[str]) -> int:
    """Run one nbgrader command in this process, as nbgrader's own tests do; its exit code."""
    from jupyter_core.application import NoStart
    from nbgrader.apps import NbGraderApp

    app = NbGraderApp.instance()
    try:
        app.initialize(args)
        app.start()
    except NoStart:
        return 0
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        app.reset()
    return 0


def batch(commands: list[list[str]]) -> int:
    """Run nbgrader commands in this process (the worker of :func:`run_nbgrader_batch`)."""
    for args in commands:
        start = time.perf_counter()
        code = run_app(args)
        if code:
            print(f"nbgrader {' '.join(args)} exited with {code}", file=sys.stderr)
            return code
        print(f"{TIMING_PREFIX}{json.dumps([args[0], time.perf_counter() - start])}", file=sys.stderr)
    return 0


SERVE_DONE = "nbgrader-command-exited: "


def serve() -> int:
    """Run nbgrader commands read from standard input, one JSON line each
    (``{"args": [...], "cwd": folder, "env": {name: value}}``), one after another in
    this process, each in its folder with its variables added to the environment;
    after each, print :data:`SERVE_DONE` and its exit code on a line of its own.
    The worker of ``tests/nbgrader_session.py``: nbgrader starts once for many commands."""
    for line in sys.stdin:
        request = json.loads(line)
        saved = dict(os.environ)
        os.environ.update(request.get("env", {}))
        os.chdir(request["cwd"])
        try:
            code = run_app(request["args"])
        except Exception as exc:  # reported to the caller, who fails with the output
            print(f"nbgrader {request['args']} raised {exc!r}", file=sys.stderr)
            code = 1
        finally:
            os.environ.clear()
            os.environ.update(saved)
        sys.stderr.flush()
        print(f"\n{SERVE_DONE}{code}", flush=True)
    return 0


def batch_timings(output: str) -> dict[str, float]:
    """``{command: seconds}`` from the output of :func:`run_nbgrader_batch`."""
    found = {}
    for line in output.splitlines():
        if line.startswith(TIMING_PREFIX):
            name, seconds = json.loads(line[len(TIMING_PREFIX) :])
            found[name] = seconds
    return found


def make_course(root: Path, assignments: list[str]) -> Path:
    """A scratch course: the repository's nbgrader config and the assignments' sources."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    for name in assignments:
        shutil.copytree(REPO / "solutions" / name, root / "solutions" / name, dirs_exist_ok=True)
    return root


def release_path(root: Path, assignment: str) -> Path:
    """Where ``nbgrader generate_assignment`` writes an assignment's student notebook."""
    return Path(root) / "exercises" / assignment / f"{assignment}.ipynb"


def generate(root: Path, assignment: str) -> Path:
    """``nbgrader generate_assignment``; returns the generated student notebook."""
    run_nbgrader(["generate_assignment", assignment, "--force"], cwd=root)
    return release_path(root, assignment)


def submit(root: Path, student: str, assignment: str, notebook: dict | Path) -> Path:
    """Place a notebook (a path or notebook JSON) as ``submitted/<student>/<assignment>/``."""
    folder = Path(root) / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{assignment}.ipynb"
    if isinstance(notebook, dict):
        target.write_text(json.dumps(notebook, indent=1))
    else:
        shutil.copy(notebook, target)
    return target


def scores(root: Path, assignment: str, notebook: str | None = None) -> dict[str, dict[str, float]]:
    """``{student: {grade_id: score, ..., "total": score}}`` from the gradebook."""
    from nbgrader.api import Gradebook

    notebook = notebook or assignment
    out: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{Path(root).resolve() / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(assignment):
            nb = gb.find_submission_notebook(notebook, assignment, sub.student_id)
            cells = {grade.name: float(grade.score) for grade in nb.grades}
            cells["total"] = float(nb.score)
            out[sub.student_id] = cells
    return out


class ReleaseRefused(Exception):
    """An assignment whose checks let a catalogued mistake earn full marks (or fail a correct
    answer): its text names each, one a line."""


def mutant_refusals(assignment: str, release_notebook: Path) -> list[str]:
    """Why ``assignment`` must not be released with this student notebook: its mutant
    catalogue graded in-process (:func:`nbgrader_tools.mutants.refusals`: the instructor's tools,
    never in the learner kit)."""
    from nbgrader_tools.mutants import refusals

    return refusals(assignment, json.loads(release_notebook.read_text(encoding="utf-8")))


def release(assignments: list[str] | None = None) -> list[Path]:
    """Regenerate ``exercises/<assignment>/`` from ``solutions/`` (in a scratch course), after
    writing the source notebooks' generated cells (:func:`nbgrader_tools.generated.sync`) and
    their points from ``sdpa_course/grading/`` (:func:`nbgrader_tools.points.sync`, which raises
    :class:`nbgrader_tools.points.PointsError` before anything is written when a number of
    points in a statement is written by hand).

    Without names, the course's homework: each folder holding ``<name>/<name>.ipynb``. A plain
    nbgrader assignment (:mod:`classgrader.assignments.plain_nbgrader`, e.g. the template ``hw_template_plain``) is
    released only when named, so that a template never reaches the learners by itself; its
    points are its own cells' metadata.

    Before anything is written to ``exercises/``, each course homework's mutant catalogue is
    graded on the new release (:func:`mutant_refusals`): a catalogued mistake that earns full
    marks under any of the secrets tried, a correct corpus answer that does not, or an assignment
    without mutants raises :class:`ReleaseRefused` naming them."""
    names = assignments or sorted(p.name for p in (REPO / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())
    from . import points
    from .generated import sync

    for name in names:
        if not (REPO / "solutions" / name).is_dir():
            raise FileNotFoundError(f"no assignment {name!r}: solutions/{name}/ does not exist")
    # a course homework has <name>/<name>.ipynb; a plain one has none and no points in sdpa_course/grading/
    sources = {name: REPO / "solutions" / name / f"{name}.ipynb" for name in names}
    sources = {name: path for name, path in sources.items() if path.is_file()}
    for name, path in sources.items():
        # every notebook is checked before any is written: a refusal leaves all as they were
        points.check(path, name, path.relative_to(REPO).as_posix())
    for name, path in sources.items():
        for change in points.sync(path, name, path.relative_to(REPO).as_posix()):
            print(f"points from sdpa_course/grading/: {change}")
        sync(path, name)
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        root = make_course(Path(tmp), names)
        releases = {name: generate(root, name) for name in names}
        # every course homework's mutants are graded on its new release before any is written
        refused = [why for name in sources for why in mutant_refusals(name, releases[name])]
        if refused:
            raise ReleaseRefused("\n".join(refused))
        for name, generated in releases.items():
            target = REPO / "exercises" / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(generated.parent, target)
            for path in target.rglob("*"):
                if path.is_file():
                    path.chmod(0o644)
            written.append(target / generated.name if generated.is_file() else target)
    return written
