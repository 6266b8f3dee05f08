"""A term on a real JupyterHub, the learner in Chromium, the instructor with nbgrader and ``./course grade``.

The hub runs the course's own configuration (``hub/jupyterhub_config.py``, with
``hub/nbgrader_config.py`` for everyone's nbgrader) with only what a test must
change laid over it: addresses on 127.0.0.1 at ports the OS picks, its state,
the exchange and the learner's home in a temporary folder, and a test
authenticator (JupyterHub's DummyAuthenticator with one password) in place of
PAM. The single-user environment is a virtual environment with the learner
kit's wheel (built here) that reads everything else ``hub/singleuser.sh``
installs from this repository's environment (nothing is downloaded), with
the script's own ``jupyter labextension`` lines applied. The proxy is
configurable-http-proxy from ``_ext/node_modules`` (pinned in ``_ext/package.json``).

The learner is a real local account (``useradd``, removed afterwards): the
hub starts their JupyterLab under it, as on a course's machine, and nbgrader's
exchange knows them by it. So the test needs root; it is skipped otherwise
(CI runs as root).

In Chromium (only the hub's address can be reached), the learner logs in,
finds the learner's nbgrader tools and not the instructors', fetches hw2 from
the assignment list, writes the course's solution into the answer cell, runs
every cell (the last one is the check before submitting: 10 of 10 points),
saves, validates and submits. The instructor collects, grades with ``./course
grade`` (``python -m classgrader``) and releases the feedback with nbgrader's
commands, as in ``tests/test_exchange_round_trip.py``; the learner fetches the
feedback from the assignment list and opens the course's page. Afterwards the
hub is stopped, and the test fails if the proxy or the learner's server
outlived it; the account is removed. The time of each step is printed
(``pytest -s``); screenshots go to ``_build/screenshots/hub-*.png``.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from browser import SCREENSHOTS, WAIT_LIMIT_MS, BookBrowser, chromium_for
from local_server import free_port, stop, wait_until_up
from release_run import before_submit_points
from test_class_grading import needs_sandbox
from test_exchange_round_trip import ASSIGNMENT, REPO, Term

from devtools.sample_submissions import Builder
from nbgrader_tools.kit import build_wheel

PROXY = REPO / "_ext" / "node_modules" / ".bin" / "configurable-http-proxy"
VENV_BIN = Path(sys.executable).parent
PASSWORD = secrets.token_urlsafe(12)

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="the hub test creates a local account for the learner (useradd) and starts their server under it: "
    "it needs root (CI runs as root)",
)


def _python_for(user: str) -> str:
    """A Python of this minor version that ``user`` can run (this one may sit in root's home)."""
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        os.path.realpath(sys._base_executable),
        shutil.which(minor),
        f"/usr/bin/{minor}",
        f"/usr/local/bin/{minor}",
    ]
    for candidate in dict.fromkeys(c for c in candidates if c):
        try:
            probe = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2])"], user=user, capture_output=True, text=True
            )
        except OSError:  # not reachable from that account
            continue
        if probe.returncode == 0 and probe.stdout.strip() == str(sys.version_info[:2]):
            return candidate
    pytest.fail(f"no {minor} that the learner's account can run (looked at {candidates})")


def _labextension_lines() -> list[list[str]]:
    """The arguments of each ``jupyter labextension`` line of hub/singleuser.sh."""
    script = (REPO / "hub" / "singleuser.sh").read_text()
    found = [line.split()[2:] for line in script.splitlines() if re.match(r'"\$ENV/bin/jupyter" labextension ', line)]
    assert found, "hub/singleuser.sh turns no JupyterLab extension off"
    return found


def _singleuser_env(root: Path, user: str) -> Path:
    """The single-user environment: the learner kit's wheel, over this environment's packages.

    This virtual environment holds the rest of what ``hub/singleuser.sh`` installs
    (JupyterLab, nbgrader and its extensions, JupyterHub, the kit's pinned
    requirements), and nothing may be downloaded here; its interpreter may be
    unreachable to another account, so a venv of one the learner can run, of
    the same version, reads its packages after its own.
    """
    env = root / "singleuser"
    subprocess.run([_python_for(user), "-m", "venv", "--without-pip", str(env)], check=True, capture_output=True)
    (site,) = env.glob("lib/python3*/site-packages")
    (root / "kit").mkdir()
    wheel = build_wheel(root / "kit")
    pip = [sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)
    # After the install: with this file in place, pip would find the course's editable install
    # and skip the kit's wheel as already installed.
    ours = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_relative_to(sys.prefix))
    (site / "course_packages.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    for args in _labextension_lines():  # hub/singleuser.sh's own, into this environment
        subprocess.run(
            [env / "bin" / "python", "-m", "jupyterlab.labextensions", *args], check=True, capture_output=True
        )
    where = subprocess.run(
        [
            env / "bin" / "python",
            "-c",
            "from sdpa_course import grading, lib, teaching; print(grading.__file__, lib.__file__)",
        ],
        user=user,
        cwd=env,  # not this repository, whose sdpa_course/lib/ would come first
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(Path(f).is_relative_to(site) for f in where.stdout.split()), f"not the kit's: {where.stdout}"
    return env


@dataclass
class Hub:
    """A running hub: its address, its process, its log; every step timed."""

    root: Path
    origin: str
    process: subprocess.Popen
    log: Path
    learner: str
    term: Term
    times: dict[str, float] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"{self.origin}/{path.lstrip('/')}"

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def timed(self, step: str, started: float) -> None:
        self.times[step] = time.monotonic() - started


def _config(root: Path, learner: str, ports: dict[str, int], singleuser: Path) -> Path:
    """The test's hub configuration: the course's, then only what a test must change."""
    config = root / "jupyter-config"
    config.mkdir()
    # Everyone's nbgrader reads the course's settings, with the exchange moved into this test's folder.
    (config / "nbgrader_config.py").write_text(
        (REPO / "hub" / "nbgrader_config.py").read_text() + f"c.Exchange.root = {str(root / 'exchange')!r}\n"
    )
    state = root / "hub-state"
    state.mkdir(mode=0o700)
    path = state / "jupyterhub_config.py"
    path.write_text(
        f"""
load_subconfig({str(REPO / "hub" / "jupyterhub_config.py")!r})
c.JupyterHub.bind_url = "http://127.0.0.1:{ports["public"]}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {ports["hub"]}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports["proxy_api"]}"
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.JupyterHub.db_url = "sqlite:///{state / "jupyterhub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(state / "cookie_secret")!r}
c.JupyterHub.pid_file = {str(state / "jupyterhub.pid")!r}
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {PASSWORD!r}
c.Authenticator.allowed_users = {{{learner!r}}}
c.Authenticator.admin_users = set()
c.Spawner.cmd = [{str(singleuser / "bin" / "python")!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.ip = "127.0.0.1"
c.Spawner.environment = {{
    "PATH": {str(singleuser / "bin")!r} + ":/usr/local/bin:/usr/bin:/bin",
    # nbgrader's settings, then this environment's extension settings and data (labextensions)
    "JUPYTER_CONFIG_PATH": {str(config)!r} + ":" + {str(Path(sys.prefix) / "etc" / "jupyter")!r},
    "JUPYTER_PATH": {str(Path(sys.prefix) / "share" / "jupyter")!r},
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}}
"""
    )
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _processes_of(user: str) -> list[int]:
    """The processes that run as ``user`` (read from /proc: no procps needed)."""
    try:
        uid = str(pwd.getpwnam(user).pw_uid)
    except KeyError:
        return []
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:  # it ended meanwhile
            continue
        real = next((line.split()[1] for line in lines if line.startswith("Uid:")), None)
        if real == uid:
            found.append(int(status.parent.name))
    return found


@pytest.fixture(scope="module")
def hub() -> Iterator[Hub]:
    if shutil.which("useradd") is None:
        pytest.fail("useradd is missing (Debian: the passwd package)")
    if not PROXY.is_file():
        pytest.fail(f"{PROXY.relative_to(REPO)} is missing: run ./course build (npm ci in _ext/) first")
    # The learner's account must reach its home and the exchange, which pytest's private
    # temporary folders (mode 700) would hide: one folder of our own, readable by all.
    root = Path(tempfile.mkdtemp(prefix="course-hub-"))
    root.chmod(0o755)
    learner = f"learner{secrets.token_hex(3)}"
    process = None
    proxy_pid = None
    term = None
    try:
        term = Term(root)
        (root / "roster.txt").write_text(learner + "\n")
        started = time.monotonic()
        subprocess.run(
            ["useradd", "--create-home", "--home-dir", str(root / "home" / learner), "--shell", "/bin/sh", learner],
            check=True,
            capture_output=True,
        )
        term.times["useradd"] = [time.monotonic() - started]
        ports = {name: free_port() for name in ("public", "hub", "proxy_api")}
        config = _config(root, learner, ports, _singleuser_env(root, learner))
        log = root / "hub.log"
        env = {**os.environ, "PATH": f"{VENV_BIN}:{PROXY.parent}:{os.environ.get('PATH', '')}"}
        started = time.monotonic()
        with log.open("w") as out:
            process = subprocess.Popen(
                [str(VENV_BIN / "jupyterhub"), "-f", str(config)],
                cwd=config.parent,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        origin = f"http://127.0.0.1:{ports['public']}"
        wait_until_up(f"{origin}/hub/health", process, log, "the hub")
        pid_file = config.parent / "jupyterhub-proxy.pid"  # the hub writes it in its working folder
        assert pid_file.is_file(), f"the hub started no proxy:\n{log.read_text()[-4000:]}"
        proxy_pid = int(pid_file.read_text())
        h = Hub(root, origin, process, log, learner, term)
        h.timed("hub up", started)
        yield h
    finally:
        left: list[str] = []
        if term is not None:
            term.session.close()
        if process is not None:
            stop(process)  # the hub stops the learner's server and its proxy on the way out
        if proxy_pid is not None and _alive(proxy_pid):
            left.append(f"the proxy (process {proxy_pid})")
            os.kill(proxy_pid, signal.SIGKILL)
        deadline = time.monotonic() + 60  # the learner's kernel may take a moment to exit after its server
        while _processes_of(learner) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in _processes_of(learner):  # a server or kernel that outlived the hub
            left.append(f"the learner's process {pid}")
            os.kill(pid, signal.SIGKILL)
        subprocess.run(["userdel", "--remove", learner], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"still running after the hub stopped (now killed): {', '.join(left)}"


@pytest.fixture(scope="module")
def hub_browser(hub: Hub) -> Iterator[BookBrowser]:
    with chromium_for(hub) as browser:  # it needs only the hub's origin
        yield browser


def _log_in(page: Any, hub: Hub) -> None:
    page.goto(hub.url("hub/login"))
    page.fill("#username_input", hub.learner)
    page.fill("#password_input", PASSWORD)
    page.click("#login_submit")
    try:
        page.wait_for_url(f"**/user/{hub.learner}/lab**")
        page.locator(".jp-LabShell").wait_for()
    except Exception as exc:
        raise AssertionError(f"JupyterLab did not open ({page.url}): {exc}\nhub log:\n{hub.tail()}") from exc


def _open_assignment_list(page: Any) -> tuple[Any, list[str]]:
    """Menu Nbgrader > Assignment List: the list's panel, and the menu's items as shown."""
    page.get_by_role("menuitem", name="Nbgrader").click()
    entry = page.get_by_role("menuitem", name="Assignment List")
    entry.wait_for()
    items = page.locator(".lm-Menu .lm-Menu-itemLabel").all_inner_texts()
    entry.click()
    panel = page.locator("#nbgrader-assignment-list, .nbgrader-AssignmentList, .jp-MainAreaWidget").filter(
        has_text="Released assignments"
    )
    panel.first.wait_for()
    return panel.first, items


def _shot(page: Any, name: str) -> None:
    """What the learner saw at each step, in _build/screenshots/ (beside the other browser tests')."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"hub-{name}.png"))


def _write_answer(page: Any, source: str) -> None:
    """Replace the text of the answer cell (the one that defines the function the checks call)."""
    cell = page.locator(".jp-CodeCell").filter(has_text=re.compile(r"def softmax_rows\("))
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(source)
    assert "NotImplementedError" not in editor.inner_text()


def _save(page: Any, saved: Path, hub: Hub) -> None:
    """Save the notebook as a learner does (Ctrl+S), and wait until the answer is on disk.

    JupyterLab saves the widget that has the focus: a click on the notebook's
    first cell makes that the notebook, not the assignment list it was opened from.
    """
    for _ in range(3):
        page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.click()
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + WAIT_LIMIT_MS / 3000  # three tries share the browser's limit
        while "NotImplementedError()" in saved.read_text() and time.monotonic() < deadline:
            time.sleep(0.3)
        if "NotImplementedError()" not in saved.read_text():
            return
    raise AssertionError(f"the answer was not saved\n{hub.tail()}")


@needs_root
@needs_sandbox
def test_a_learner_on_the_hub_fetches_answers_submits_and_reads_the_courses_feedback(hub, hub_browser):
    term = hub.term
    answer = Builder(REPO, ASSIGNMENT)
    solution = answer.solution.cells[answer.answer_index].source
    home = hub.root / "home" / hub.learner
    started = time.monotonic()
    term.nbgrader("release_assignment", "release_assignment", ASSIGNMENT)
    hub.timed("release_assignment (instructor)", started)

    context = hub_browser.new_context()
    page = context.new_page()
    page.set_default_timeout(WAIT_LIMIT_MS)  # every wait below: the browser tests' generous limit
    try:
        started = time.monotonic()
        _log_in(page, hub)
        hub.timed("log in and start JupyterLab", started)

        started = time.monotonic()
        panel, items = _open_assignment_list(page)
        # The learner's tools, not the instructors' (hub/singleuser.sh turns those off).
        assert "Assignment List" in items and not [i for i in items if "Formgrader" in i], items
        assert page.locator(".lm-TabBar-tab").filter(has_text="Create Assignment").count() == 0
        released = panel.locator(".list_item").filter(has_text=ASSIGNMENT)
        released.get_by_role("button", name="Fetch").click()
        panel.get_by_role("button", name="Submit").wait_for()
        assert (home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file(), "Fetch gave the learner the release"
        hub.timed("fetch from the assignment list", started)
        _shot(page, "1-fetched")

        started = time.monotonic()
        panel.locator("a.assignment-notebooks-link").filter(has_text=ASSIGNMENT).click()
        panel.locator(".nested_list_item a").filter(has_text=ASSIGNMENT).click()
        page.locator(".jp-NotebookPanel .jp-CodeCell").first.wait_for()
        # The kernel is up before the answer is written (run earlier, Run All may be dropped).
        page.get_by_text(re.compile(r"Python 3 \(ipykernel\) \| Idle")).first.wait_for()
        _write_answer(page, solution)
        page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.click()  # the notebook has the focus
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        report = page.locator(".jp-OutputArea-output").filter(has_text="Check before you submit (")
        try:
            report.wait_for()
        except Exception as exc:
            _shot(page, "2-not-checked")
            raise AssertionError(f"the check before submitting printed nothing: {exc}\n{hub.tail()}") from exc
        _shot(page, "2-checked")
        assert before_submit_points(report.inner_text()) == (ASSIGNMENT, 10.0, 10.0)
        _save(page, home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", hub)
        hub.timed("answer, run every cell (the check before submitting), save", started)

        started = time.monotonic()
        page.locator(".lm-TabBar-tab").filter(has_text=re.compile(r"^Assignments$")).click()
        validate = panel.get_by_role("button", name="Validate")
        if not validate.is_visible():
            panel.locator("a.assignment-notebooks-link").filter(has_text=ASSIGNMENT).click()
        validate.click()
        dialog = page.locator(".jp-Dialog").filter(has_text="Validation Results")
        dialog.wait_for()
        assert "Success! Your notebook passes all the tests." in dialog.inner_text()
        dialog.get_by_role("button", name="Ok").click()
        panel.locator("button.btn-success").filter(has_text="Validate").wait_for()
        hub.timed("nbgrader's Validate in the assignment list", started)

        started = time.monotonic()
        panel.get_by_role("button", name="Submit").click()
        panel.locator("#submitted_assignments_list .list_item, .list_item").filter(
            has_text="Fetch Feedback"
        ).first.wait_for()
        _shot(page, "3-submitted")
        hub.timed("submit from the assignment list", started)

        started = time.monotonic()
        term.nbgrader("collect", "collect", ASSIGNMENT)
        assert sorted(p.name for p in (term.course / "submitted").iterdir()) == [hub.learner]
        term.grade("./course grade")
        term.nbgrader("release_feedback", "release_feedback", ASSIGNMENT)
        hub.timed("collect, ./course grade, release_feedback (instructor)", started)

        started = time.monotonic()
        page.reload()
        page.locator(".jp-LabShell").wait_for()
        panel, _ = _open_assignment_list(page)
        panel.get_by_role("button", name="Fetch Feedback").click()
        panel.get_by_text("(view feedback)").click()
        page.locator(".jp-DirListing-item").filter(has_text=f"{ASSIGNMENT}.html").dblclick()
        frame = page.frame_locator(".jp-HTMLViewer iframe")
        frame.get_by_text("Score: 10 / 10").wait_for()
        _shot(page, "4-feedback")
        shown = frame.locator("body").inner_text()
        assert f"Student: {hub.learner}" in shown
        hub.timed("fetch the feedback and open it", started)
    finally:
        context.close()
    print("\nJupyterHub term: step, seconds")
    for step, seconds in hub.times.items():
        print(f"  {step:60s} {seconds:7.2f}")
    for step, calls in term.times.items():
        print(f"  {step + ' (command)':60s} {sum(calls):7.2f}")
