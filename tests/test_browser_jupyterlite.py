"""Python in the browser: the site's own JupyterLite, in headless Chromium, offline.

A chapter's notebook opens in JupyterLite, all its cells run in the Pyodide
kernel (numpy, matplotlib, ``lib``, ``teaching``) with no error, and its
explorer answers a slider; a homework release runs its visible test cells,
which fail on the blank release with the messages a desktop Jupyter gives and
pass once the instructor solution's answers are pasted in, and File → Download
hands in that work under the homework's own name. Every request goes to the
test server on 127.0.0.1 (anything else is blocked and counted).

The notebooks show no raw MyST: in every chapter's in-browser notebook no
markdown cell holds a role (``{doc}`...```) or a directive fence, as source
or as JupyterLab renders it, and a link made from a ``{doc}`` role opens its
notebook. Matplotlib's first import writes nothing to stderr (no "building
the font cache" in a pink box).

Booting Pyodide is most of what these tests cost, so each notebook is opened
once, by a module fixture, and the tests that need only JupyterLab (a link,
the rendering of Markdown) use the chapter page that is open anyway. Each test
asserts its own claim on what the fixture recorded or on the page, and checks
only what went wrong on the page while it ran, so the order does not matter.
That each page's "Run in the browser" button leads here is read from the built
HTML (``tests/test_built_pages.py``).

The time from opening a notebook to an idle kernel is recorded and printed at
the end of the run (no timed assertion).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser import HTML, KERNEL_IDLE_JS, PANEL, ROOT, SESSION, PageLog
from lite.markdown import notebook_path
from release_run import before_submit_points, execute_as_learner

from nbgrader_tools.cells import nbgrader_meta
from sdpa_course import grading

# How long the in-browser kernel may take at most before the test gives up
# (a limit for a hung page, not a speed requirement: the kernel loads numpy,
# matplotlib and the course as it starts, which on a machine shared by many
# test runs has taken over 4 minutes).
KERNEL_LIMIT_MS = 600_000
WIDGET = "application/vnd.jupyter.widget-view+json"  # a live widget's output
RUN_LIMIT_MS = 600_000
KERNEL_STARTS: list[tuple[str, float]] = []

CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
HOMEWORK = sorted(p.name for p in (ROOT / "exercises").iterdir() if p.is_dir())


def explorer_chapter() -> Path:
    """The first chapter with an explorer that has a slider (moved below).

    In a live kernel, teaching.explorer shows ipywidgets: a SelectionSlider per
    Slider control and a widgets.Image that the Python side redraws.
    """
    for md in CHAPTERS:
        text = md.read_text(encoding="utf-8")
        if "from sdpa_course.teaching.explorer import" in text and "Slider(" in text:
            return md
    pytest.fail("no chapter has an explorer with a slider: choose another chapter for the live-explorer test")


# --------------------------------------------------------------------------- driving JupyterLite

# Run every cell; resolves when the last has finished (JupyterLab's runAll promise).
RUN_ALL_JS = "() => window.jupyterapp.commands.execute('notebook:run-all-cells')"
CELLS_JS = f"""() => {PANEL}.content.model.sharedModel.cells.map((c) => ({{
  type: c.cell_type, source: c.getSource(), metadata: c.getMetadata(),
  outputs: c.cell_type === 'code' ? c.getOutputs() : [],
  execution_count: c.cell_type === 'code' ? c.execution_count : null,
}}))"""
SET_SOURCE_JS = f"""([index, text]) => {{ {PANEL}.content.model.sharedModel.cells[index].setSource(text); }}"""
# The notebook is shown: its document is loaded and every cell has its widget.
NOTEBOOK_SHOWN_JS = f"""() => {{
  const p = window.jupyterapp && {PANEL};
  return !!(p && p.context && p.context.isReady && p.content && p.content.model && p.content.widgets.length
    && p.content.model.sharedModel.cells.length === p.content.widgets.length);
}}"""


@dataclass
class LitePage:
    """A notebook open in the site's JupyterLite, and what went wrong on its page."""

    page: Any
    log: PageLog

    def problems_from_now(self, book_browser: Any) -> Callable[[], None]:
        """Make this page the one whose blocked requests are logged; return a check of what
        went wrong on it from now on (a page several tests use is checked by each for its own part)."""
        book_browser.current = self.log
        counts = {name: len(getattr(self.log, name)) for name in ("blocked", "bad_responses", "page_errors")}

        def check() -> None:
            assert_stayed_home(self.log, counts)

        return check


def open_in_lite(book_browser: Any, context: Any, notebook: str) -> LitePage:
    """Open a notebook of the site's JupyterLite and wait for an idle kernel."""
    page = context.new_page()
    log = PageLog(f"lite:{notebook}")
    book_browser.current = log
    page.on("pageerror", lambda e: log.page_errors.append(str(e)))
    page.on("response", lambda r: log.bad_responses.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    started = time.monotonic()
    page.goto(book_browser.server.url(f"lite/notebooks/index.html?path={notebook}"), wait_until="load")
    page.wait_for_function(KERNEL_IDLE_JS, timeout=KERNEL_LIMIT_MS, polling=250)
    KERNEL_STARTS.append((notebook, time.monotonic() - started))
    SESSION["pages_opened"].add(f"lite/notebooks/index.html?path={notebook}")
    return LitePage(page, log)


def run_all(page: Any) -> list[dict]:
    """Run the notebook (Run All, as a learner does) and return its cells."""
    page.set_default_timeout(RUN_LIMIT_MS)
    page.evaluate(RUN_ALL_JS)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=RUN_LIMIT_MS, polling=250)
    return page.evaluate(CELLS_JS)


def errors(cells: list[dict]) -> list[str]:
    """Every error output, with the start of the cell that raised it."""
    return [
        f"{o['ename']}: {o['evalue']} (in: {cell['source'][:80]!r})"
        for cell in cells
        for o in cell["outputs"]
        if o.get("output_type") == "error"
    ]


def assert_stayed_home(log: PageLog, since: dict[str, int] | None = None) -> None:
    """Nothing went wrong on the page (since the counts ``since`` of each list, if given)."""
    since = since or {}
    blocked, bad, thrown = (getattr(log, n)[since.get(n, 0) :] for n in ("blocked", "bad_responses", "page_errors"))
    assert not blocked, f"requests left the machine (blocked): {blocked[:5]}"
    assert not bad, f"HTTP errors: {bad[:5]}"
    assert not thrown, f"uncaught script errors: {thrown[:5]}"


# --------------------------------------------------------------------------- a chapter


@pytest.fixture(scope="module")
def chapter_in_lite(book_browser) -> Iterator[LitePage]:
    """The explorer chapter's notebook, open in JupyterLite with an idle kernel, in a context of its own:
    the chapter test runs it; the link and rendering tests need only JupyterLab, which it has loaded."""
    context = book_browser.new_context()
    try:
        opened = open_in_lite(book_browser, context, f"chapters/{explorer_chapter().stem}.ipynb")
        assert_stayed_home(opened.log)
        yield opened
    finally:
        context.close()


def test_a_chapter_runs_in_the_browser_and_its_explorer_answers(book_browser, chapter_in_lite):
    check = chapter_in_lite.problems_from_now(book_browser)
    page = chapter_in_lite.page
    cells = run_all(page)
    code = [c for c in cells if c["type"] == "code"]
    assert code and all(c["execution_count"] for c in code), "some code cells did not run"
    assert not errors(cells), "cells raised errors in the browser:\n" + "\n".join(errors(cells))
    # Nothing harmless may look like an error: JupyterLab shows stderr in a pink box.
    stderr = [(c["source"][:60], o["text"][:120]) for c in code for o in c["outputs"] if o.get("name") == "stderr"]
    assert not stderr, f"cells wrote to stderr (shown as a pink box): {stderr}"
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    images = [o for c in code for o in c["outputs"] if "image/png" in o.get("data", {})]
    assert images, "no matplotlib figure came out of the chapter"
    assert any(WIDGET in o.get("data", {}) for c in code for o in c["outputs"]), "the explorer made no widget"
    # The explorer is live: moving its slider re-runs the Python behind it. JupyterLab draws only the
    # cells near the view, as a learner scrolls: bring the explorer's cell into view first.
    first = next(n for n, c in enumerate(cells) if any(WIDGET in o.get("data", {}) for o in c["outputs"]))
    page.evaluate(f"(n) => {PANEL}.content.scrollToItem(n, 'center')", first)
    slider = page.locator(
        ".jp-OutputArea-output .widget-slider .noUi-handle, .jp-OutputArea-output .widget-slider input[type=range]"
    ).first
    slider.wait_for(state="visible", timeout=KERNEL_LIMIT_MS)
    before = page.locator(".jp-OutputArea-output img.widget-image").first.get_attribute("src")
    readout = page.locator(".widget-slider .widget-readout").first.inner_text()
    slider.focus()
    page.keyboard.press("Home")
    page.wait_for_function(
        "(old) => { const r = document.querySelector('.widget-slider .widget-readout');"
        " return r && r.textContent.trim() !== old; }",
        arg=readout.strip(),
        timeout=KERNEL_LIMIT_MS,
    )
    page.wait_for_function(
        "(old) => { const i = document.querySelector('.jp-OutputArea-output img.widget-image');"
        " return i && i.getAttribute('src') !== old; }",
        arg=before,
        timeout=KERNEL_LIMIT_MS,
    )
    page.screenshot(path=str(ROOT / "_build" / "screenshots" / "lite_chapter.png"))
    check()


# --------------------------------------------------------------------------- no raw MyST

RAW_ROLE = re.compile(r"\{[a-zA-Z][\w:+-]*\}`")
RAW_DIRECTIVE = re.compile(r"^\s*(`{3,}|:{3,})\{", re.MULTILINE)
# A notebook as JupyterLite's drive serves it, each markdown cell rendered as the notebook view renders one:
# its source, as a MimeModel's 'text/markdown' (not trusted), through the notebook's own rendermime.
RENDER_MARKDOWN_JS = f"""async (path) => {{
  const notebook = {PANEL}.content;
  const file = await window.jupyterapp.serviceManager.contents.get(path, {{ content: true }});
  const shown = [];
  for (const cell of file.content.cells.filter((c) => c.cell_type === 'markdown')) {{
    const source = Array.isArray(cell.source) ? cell.source.join('') : cell.source;
    const renderer = notebook.rendermime.createRenderer('text/markdown');
    await renderer.renderModel({{
      data: {{ 'text/markdown': source }}, metadata: {{}}, trusted: false, setData() {{}},
    }});
    shown.push({{ source, text: renderer.node.textContent }});
    renderer.dispose();
  }}
  return {{ folder: {PANEL}.context.path.split('/').slice(0, -1).join('/'), cells: shown }};
}}"""


# Every page's converted Markdown is free of raw MyST in-process (tests/test_lite_markdown.py); what only the
# browser shows is the notebook as the drive serves it and JupyterLab's rendering of it. Rendering a cell
# needs JupyterLab, not a kernel, nor a page of its own: every chapter is rendered in the chapter page.
@pytest.mark.parametrize("chapter", [md.stem for md in CHAPTERS])
def test_the_in_browser_notebook_shows_no_raw_myst(book_browser, chapter_in_lite, chapter):
    check = chapter_in_lite.problems_from_now(book_browser)
    got = chapter_in_lite.page.evaluate(RENDER_MARKDOWN_JS, f"chapters/{chapter}.ipynb")
    # Links and images resolve against the open notebook's folder: the same folder, as for the notebook itself.
    assert got["folder"] == "chapters", got["folder"]
    markdown = [c["source"] for c in got["cells"]]
    assert markdown, f"{chapter}: no markdown cell in the in-browser notebook"
    raw = [m.group(0) + " in " + repr(text[:100]) for text in markdown for m in RAW_ROLE.finditer(text)]
    raw += [m.group(0) + " in " + repr(text[:100]) for text in markdown for m in RAW_DIRECTIVE.finditer(text)]
    rendered = [c["text"] for c in got["cells"]]
    assert any(t.strip() for t in rendered), f"{chapter}: JupyterLab rendered no markdown cell"
    raw += [m.group(0) + " shown in " + repr(text[:100]) for text in rendered for m in RAW_ROLE.finditer(text)]
    assert not raw, f"{chapter}: raw MyST in the in-browser notebook:\n" + "\n".join(raw[:10])
    check()


def test_a_link_from_a_doc_role_opens_that_pages_notebook(book_browser, chapter_in_lite):
    """A chapter links to another: clicking the link opens that chapter's notebook in the same JupyterLite."""
    assert re.search(r"\{doc\}`0\d_", explorer_chapter().read_text(encoding="utf-8")), (
        f"{explorer_chapter().name} links to no other chapter: choose another page for the link test"
    )
    check = chapter_in_lite.problems_from_now(book_browser)
    page = chapter_in_lite.page
    # JupyterLab renders the cells near the view only: bring the first cell with such a link there.
    page.evaluate(
        f"""async () => {{
          const nb = {PANEL}.content;
          const i = nb.model.sharedModel.cells.findIndex(
            (c) => c.cell_type === 'markdown' && /\\]\\([^)]*\\.ipynb/.test(c.getSource()));
          nb.activeCellIndex = i;
          await nb.scrollToItem(i);
        }}"""
    )
    link = page.locator(".jp-RenderedMarkdown a[href*='.ipynb']").first
    link.wait_for(state="attached", timeout=KERNEL_LIMIT_MS)
    href = link.get_attribute("href") or ""
    assert "/lite/files/" in href, f"JupyterLab did not take {href!r} for a notebook of its own"
    target = href.split("/lite/files/", 1)[1]
    # The notebook interface opens another document in a new tab.
    with page.context.expect_page(timeout=KERNEL_LIMIT_MS) as opened:
        link.click()
    other = opened.value
    try:
        other.wait_for_function(NOTEBOOK_SHOWN_JS, timeout=KERNEL_LIMIT_MS, polling=250)
        assert other.evaluate(f"() => {PANEL}.context.path") == target
    finally:
        other.close()
    check()


# --------------------------------------------------------------------------- homework


def solution_answers(assignment: str) -> dict[str, str]:
    """grade_id -> the instructor solution's answer (the cell without its markers)."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    answers = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            answers[meta["grade_id"]] = "\n".join(
                line
                for line in cell.source.splitlines()
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
            )
    return answers


def visible_tests(cells: list[dict]) -> list[tuple[int, str]]:
    """(index, grade_id) of the release's visible test cells (the hidden one holds only a comment)."""
    found = []
    for i, cell in enumerate(cells):
        meta = nbgrader_meta(cell)
        if meta.get("grade") and cell["type"] == "code" and not cell["source"].lstrip().startswith("#"):
            found.append((i, meta["grade_id"]))
    return found


def text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def cell_report(outputs: list[dict]) -> tuple[str, str, str]:
    """What a test cell showed: (what it printed, its value, the error it raised), each maybe ""."""
    printed = "".join(text(o.get("text")) for o in outputs if o.get("output_type") == "stream")
    value = "".join(text(o["data"].get("text/plain")) for o in outputs if o.get("output_type") == "execute_result")
    error = "".join(o.get("ename", "") for o in outputs if o.get("output_type") == "error")
    return printed, value, error


def desktop_reports(assignment: str) -> dict[str, tuple[str, str, str]]:
    """grade_id -> what each test cell of the blank release shows in a desktop kernel.

    The release runs in the desktop's own ipykernel (nbclient), from its folder,
    as a learner's Jupyter would run it.
    """
    release = ROOT / "exercises" / assignment / f"{assignment}.ipynb"
    nb = execute_as_learner(nbformat.read(release, as_version=4), release.parent)
    return {
        nbgrader_meta(cell)["grade_id"]: cell_report(cell.get("outputs", []))
        for cell in nb.cells
        if nbgrader_meta(cell).get("grade") and cell.cell_type == "code"
    }


@dataclass
class HomeworkRun:
    """A homework release in JupyterLite: its cells after Run All on the blank release, the answers then
    pasted into its answer cells (cell index -> text), and its cells after Run All once more."""

    opened: LitePage
    blank: list[dict]
    pasted: dict[int, str]
    solved: list[dict]


# Module-scoped, so that the tests of one assignment share its page; pytest groups them, and closes
# one assignment's page before it opens the next.
HOMEWORK_PARAMS = pytest.mark.parametrize("assignment", HOMEWORK, scope="module")


@pytest.fixture(scope="module")
def homework_in_lite(book_browser, assignment) -> Iterator[HomeworkRun]:
    """A learner's session with the homework, in a context of its own: open the release, Run All, paste
    the instructor solution's answers in, Run All again (what each test asserts of it is its own)."""
    context = book_browser.new_context()
    try:
        opened = open_in_lite(book_browser, context, notebook_path(f"exercises/{assignment}/{assignment}"))
        blank = run_all(opened.page)
        answers = solution_answers(assignment)
        pasted = {}
        for index, cell in enumerate(blank):
            grade_id = nbgrader_meta(cell).get("grade_id")
            if grade_id in answers:
                opened.page.evaluate(SET_SOURCE_JS, [index, answers[grade_id]])
                pasted[index] = answers[grade_id]
        assert len(pasted) == len(answers), f"{assignment}: pasted {len(pasted)} of {len(answers)} answers"
        yield HomeworkRun(opened, blank, pasted, run_all(opened.page))
    finally:
        context.close()


@pytest.mark.matrix
@HOMEWORK_PARAMS
def test_homework_visible_tests_fail_blank_and_pass_with_the_solution_in_the_browser(
    book_browser, homework_in_lite, assignment
):
    check = homework_in_lite.opened.problems_from_now(book_browser)
    expected = desktop_reports(assignment)

    # Run All on the blank release: every visible test fails without stopping the
    # notebook, as in a desktop kernel, and the run reaches the check before you submit.
    cells = homework_in_lite.blank
    tests = visible_tests(cells)
    assert tests, f"{assignment}: no visible test cell found in the release"
    for index, grade_id in tests:
        got = cell_report(cells[index]["outputs"])
        assert got[0].startswith("FAILED, 0 of") and got[1] == "0.0" and not got[2], (
            f"{assignment}: test cell {grade_id} of the blank release does not report 0 points: {got}"
        )
        assert got == expected[grade_id], f"{assignment}, {grade_id}: browser {got} != desktop {expected[grade_id]}"
    assert not errors(cells), f"{assignment}: Run All stopped at an error: {errors(cells)}"
    total = sum(c.points for c in grading.checks_for(assignment))
    assert before_submit_points(cell_report(cells[-1]["outputs"])[0]) == (assignment, 0.0, total)

    # Run All once more with the instructor solution's answers pasted in.
    cells = homework_in_lite.solved
    for index, grade_id in tests:
        assert cells[index]["execution_count"], f"{assignment}: {grade_id} did not run"
        bad = [f"{o['ename']}: {o['evalue']}" for o in cells[index]["outputs"] if o.get("output_type") == "error"]
        assert not bad, f"{assignment}: with the solution, test cell {grade_id} fails in the browser: {bad}"
    assert not errors(cells), f"{assignment}: errors with the solution: {errors(cells)}"
    # the check before submitting, the last cell, runs in the browser too and gives full marks
    report = "".join(o.get("text", "") for o in cells[-1]["outputs"] if o.get("output_type") == "stream")
    assert before_submit_points(report) == (assignment, total, total), report
    check()


@pytest.mark.matrix
@HOMEWORK_PARAMS
def test_a_homework_is_handed_in_with_file_download_under_its_own_name(book_browser, homework_in_lite, assignment):
    """What "Start here" says: save, then *File → Download*: the file has the homework's own name
    and holds the learner's work (the answers written into the release in the browser)."""
    check = homework_in_lite.opened.problems_from_now(book_browser)
    page = homework_in_lite.opened.page
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.get_by_role("menuitem", name="File").click()
    with page.expect_download() as download:
        page.get_by_role("menuitem", name="Download", exact=True).click()
    got = download.value
    assert got.suggested_filename == f"{assignment}.ipynb"
    handed_in = nbformat.reads(Path(got.path()).read_text(encoding="utf-8"), as_version=4)
    assert homework_in_lite.pasted, f"{assignment}: no answer was written in the browser"
    assert {i: handed_in.cells[i].source for i in homework_in_lite.pasted} == homework_in_lite.pasted
    check()


def test_lite_uses_only_the_sites_own_pyodide_and_verified_wheels():
    """The built configuration: local Pyodide, no PyPI, every shipped wheel matching its lock hash."""
    import hashlib

    config = json.loads((HTML / "lite" / "jupyter-lite.json").read_text(encoding="utf-8"))
    kernel = config["jupyter-config-data"]["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.js"
    assert kernel["disablePyPIFallback"] is True
    pyodide = HTML / "lite" / "static" / "pyodide"
    lock = json.loads((pyodide / "pyodide-lock.json").read_text(encoding="utf-8"))
    official = json.loads(
        (ROOT / "_ext" / "node_modules" / "pyodide" / "pyodide-lock.json").read_text(encoding="utf-8")
    )
    assert lock["info"] == official["info"]
    for name, entry in lock["packages"].items():
        data = (pyodide / entry["file_name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], f"{entry['file_name']} does not match the lock"
        if name in official["packages"]:
            assert entry == official["packages"][name], f"{name}: the site's lock entry differs from the official one"
    for must in ("numpy", "matplotlib", "sdpa-course", "ipywidgets"):
        assert must in lock["packages"], f"{must} is not shipped to the browser"
    assert not re.search(
        r"fonts\.googleapis|cdn\.jsdelivr\.net/pyodide",
        (HTML / "lite" / "jupyter-lite.json").read_text(encoding="utf-8"),
    )


def pytest_terminal_summary_lines() -> list[str]:
    return [f"{nb}: kernel idle {seconds:.1f} s after opening" for nb, seconds in KERNEL_STARTS]


@pytest.fixture(scope="module", autouse=True)
def _report_kernel_starts(request):
    yield
    if KERNEL_STARTS:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line("")
                reporter.write_sep("-", "JupyterLite kernel start (opening a notebook -> idle kernel)")
                for line in pytest_terminal_summary_lines():
                    reporter.write_line(line)


# CPython 3.12's pyc magic number (3531, importlib/_bootstrap_external.py), the
# Python of Pyodide 0.27; a pyc's flags 0b01: hash-based, source not checked.
PY312_MAGIC = (3531).to_bytes(2, "little") + b"\r\n"
UNCHECKED_HASH = 0b01


def test_lite_ships_the_bytecode_of_what_the_kernel_imports_as_it_starts():
    """The bytecode wheel holds, for Pyodide's CPython, a pyc of each module the kernel
    and a chapter's first cell import (most import pyplot), at the place CPython
    looks for it, made from that very source; and none for modules nothing imports
    as a chapter starts (the bytecode of every module would be twice the size).
    The standard library's zip holds the same for its modules among them."""
    import _imp
    import zipfile

    pyodide = HTML / "lite" / "static" / "pyodide"
    lock = json.loads((pyodide / "pyodide-lock.json").read_text(encoding="utf-8"))
    assert lock["info"]["python"].startswith("3.12.")
    preload = json.loads((HTML / "lite" / "jupyter-lite.json").read_text(encoding="utf-8"))["jupyter-config-data"][
        "litePluginSettings"
    ]["@jupyterlite/pyodide-kernel-extension:kernel"]["loadPyodideOptions"]["packages"]
    assert "course-bytecode" in preload, "the bytecode does not load when the kernel starts"
    sources: dict[str, bytes] = {}
    for name, entry in lock["packages"].items():
        if name == "course-bytecode" or not entry["file_name"].endswith(".whl"):
            continue
        with zipfile.ZipFile(pyodide / entry["file_name"]) as wheel:
            sources.update({m: wheel.read(m) for m in wheel.namelist() if m.endswith(".py")})
    bytecode = zipfile.ZipFile(pyodide / lock["packages"]["course-bytecode"]["file_name"])
    pycs = [name for name in bytecode.namelist() if name.endswith(".pyc")]
    key = int.from_bytes(PY312_MAGIC, "little")
    for pyc_name in pycs:
        folder, _, file = pyc_name.rpartition("/")
        assert folder.endswith("__pycache__") and file.endswith(".cpython-312.pyc"), pyc_name
        module = f"{folder[: -len('__pycache__')]}{file[: -len('.cpython-312.pyc')]}.py"
        assert module in sources, f"{pyc_name}: no shipped wheel holds {module}"
        pyc = bytecode.read(pyc_name)
        assert pyc[:4] == PY312_MAGIC, f"{pyc_name} is not CPython 3.12 bytecode"
        assert int.from_bytes(pyc[4:8], "little") == UNCHECKED_HASH, pyc_name
        assert pyc[8:16] == _imp.source_hash(key, sources[module]), f"{pyc_name} is not from {module}"
    compiled = {name.replace("__pycache__/", "").replace(".cpython-312.pyc", ".py") for name in pycs}
    for module in (
        "IPython/core/interactiveshell.py",
        "jedi/__init__.py",
        "pyodide_kernel/__init__.py",
        "numpy/__init__.py",
        "sdpa_course/lib/__init__.py",
        "sdpa_course/teaching/figures.py",
        "sdpa_course/teaching/study.py",
        "matplotlib/pyplot.py",
        "matplotlib_inline/backend_inline.py",
    ):
        assert module in compiled, f"no bytecode for {module}, which the kernel or a first cell imports"
    for module in ("matplotlib/backends/backend_svg.py", "numpy/f2py/__init__.py"):
        assert module in sources and module not in compiled, f"{module}: shipped as bytecode, yet nothing imports it"
    # The standard library's modules among them: <name>.pyc beside <name>.py in
    # the runtime's zip, where zipimport looks first.
    with zipfile.ZipFile(pyodide / "python_stdlib.zip") as stdlib:
        names = set(stdlib.namelist())
        stdlib_pycs = sorted(name for name in names if name.endswith(".pyc"))
        for pyc_name in stdlib_pycs:
            assert pyc_name[:-1] in names, f"python_stdlib.zip: {pyc_name} has no source beside it"
            pyc = stdlib.read(pyc_name)
            assert pyc[:4] == PY312_MAGIC and int.from_bytes(pyc[4:8], "little") == UNCHECKED_HASH, pyc_name
            assert pyc[8:16] == _imp.source_hash(key, stdlib.read(pyc_name[:-1])), f"{pyc_name} is not from its source"
    for module in ("asyncio/__init__.py", "inspect.py", "json/decoder.py", "pyodide/code.py"):
        assert f"{module}c" in stdlib_pycs, f"no bytecode for the standard library's {module}"
