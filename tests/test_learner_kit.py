"""The learner kit: what it holds, that it is rebuilt only when its inputs change, and that
it alone runs the homework's visible tests and check before submitting, on every Python it
promises.

For each Python 3.11 or newer on this machine (the system's own Python among them; the
default run takes the oldest, ``--matrix`` every one), a test
runs the learner's own lines, as the welcome page and "Start here" print them, in the kit's
folder with that Python as ``python3``: they make a virtual environment and install the kit
into it (PyPI or the machine's wheel cache serve the requirements). Then the released
notebooks of the environment assignments, their answers taken from ``solutions/``, run from
a folder outside the repository with nbclient inside that environment. The repository is
never on ``sys.path`` there: the kernel reports where ``lib`` and ``grading`` were imported
from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
from fixtures.homework import submissions as subs
from release_run import before_submit_points
from suite_groups import matrix_only

from nbgrader_tools import kit
from nbgrader_tools.cells import nbgrader_meta
from sdpa_course import grading


@pytest.fixture(scope="module")
def kit_dir(tmp_path_factory) -> Path:
    return kit.build(tmp_path_factory.mktemp("site"))


def test_the_wheel_holds_exactly_the_course_package(kit_dir):
    with zipfile.ZipFile(kit_dir / kit.wheel_name()) as zf:
        tops = {name.split("/", 1)[0] for name in zf.namelist()}
        model = zf.read("sdpa_course/lib/tiny_lm.npz")  # chapter 11's model, which homework 11 reads
    assert {t for t in tops if not t.endswith(".dist-info")} == {"sdpa_course"}
    assert len([t for t in tops if t.endswith(".dist-info")]) == 1
    assert model == (subs.REPO / "chapters" / "tiny_lm.npz").read_bytes()


def test_the_wheels_lib_reads_chapter_11s_model_from_beside_itself(kit_dir, tmp_path):
    """Homework 11's checks load the model through lib.tiny_lm.checkpoint(), with no chapters folder."""
    with zipfile.ZipFile(kit_dir / kit.wheel_name()) as zf:
        zf.extractall(tmp_path / "site")
    ask = "from sdpa_course.lib import tiny_lm as t; print(t.checkpoint(), t.load(t.checkpoint())[0].n_layers)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run([sys.executable, "-c", ask], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(tmp_path / "site" / "sdpa_course" / "lib" / "tiny_lm.npz"), "2"]


def _course_pins() -> dict[str, str]:
    pins = {}
    for line in (subs.REPO / "requirements" / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version.split()[0].strip()
    return pins


def test_the_requirements_are_ranges_that_hold_the_course_versions(kit_dir):
    from packaging.requirements import Requirement

    pins = _course_pins()
    lines = [
        line
        for line in (kit_dir / kit.REQUIREMENTS).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    names = set()
    for line in lines:
        req = Requirement(line)
        names.add(req.name)
        ops = {spec.operator for spec in req.specifier}
        assert ">=" in ops and "<" in ops, line
        assert req.specifier.contains(pins[req.name]), (line, pins[req.name])
    # numpy for the answers, matplotlib for the pictures of a mistake, a Jupyter to open them in
    assert {"numpy", "matplotlib", "ipykernel", "jupyterlab"} <= names


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("numpy", "a lower and an upper bound"),
        ("numpy>=1.20", "a lower and an upper bound"),
        ("numpy>=1.20,<2", "does not hold the course's own numpy=="),
    ],
)
def test_a_range_the_kit_cannot_promise_is_refused_by_name(tmp_path, monkeypatch, line, problem):
    kit_in = tmp_path / "kit.in"
    kit_in.write_text(f"# the kit\n{line}\n")
    monkeypatch.setattr(kit, "KIT_IN", kit_in)
    with pytest.raises(kit.KitError, match=problem) as info:
        kit.kit_requirements()
    assert str(kit_in) in str(info.value) and repr(line) in str(info.value)


def _notebook_links(text: str) -> list[str]:
    """Every link and image target of a notebook's Markdown cells, read with markdown-it and Python's
    HTML parser (Markdown's own links and the raw HTML elements among them)."""
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    found: list[str] = []

    class Targets(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend(value for name, value in attrs if name in ("href", "src") and value)

    md = MarkdownIt("commonmark")
    for cell in json.loads(text)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for token in md.parse(source):
            for tok in [token, *(token.children or [])]:
                if tok.type in ("link_open", "image"):
                    found.append(str(tok.attrGet("href") or tok.attrGet("src")))
                elif tok.type in ("html_inline", "html_block"):
                    Targets().feed(tok.content)
    return found


def test_the_homework_zip_is_the_release_but_for_its_links(kit_dir):
    with zipfile.ZipFile(kit_dir / kit.HOMEWORK_ZIP) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    release = subs.REPO / "exercises"
    expected = {str(p.relative_to(release)): p for p in release.rglob("*") if p.is_file()}
    assert set(members) == set(expected)
    assert len([m for m in members if m.endswith(".ipynb")]) == len(subs.ASSIGNMENTS)
    for name, path in expected.items():
        if not name.endswith(".ipynb"):
            assert members[name] == path.read_bytes(), name
            continue
        zipped, released = json.loads(members[name]), json.loads(path.read_bytes())
        assert zipped["metadata"] == released["metadata"]
        assert [c["id"] for c in zipped["cells"]] == [c["id"] for c in released["cells"]]
        for got, was in zip(zipped["cells"], released["cells"]):
            if got["cell_type"] == "code" or "../" not in "".join(was["source"]):
                assert got == was, (name, was["id"])


def _book_page(url: str, book: str):
    from built_book import HTML

    return HTML.joinpath(url.removeprefix(book).partition("#")[0])


@pytest.mark.parametrize("book", [None, "https://example.org/attention-course/"])
def test_every_link_in_the_homework_zip_leads_somewhere_once_unpacked(book):
    from built_book import built_page

    if book is not None:
        built_page("index.html")
    files = kit.homework_files(subs.REPO / "exercises", book)
    to_book = 0
    for name, data in files.items():
        if not name.endswith(".ipynb"):
            continue
        for target in _notebook_links(data.decode()):
            if book is not None and target.startswith(book):
                to_book += 1
                assert _book_page(target, book).is_file(), (name, target)
            elif "://" not in target and not target.startswith(("#", "mailto:")):
                inside = os.path.normpath(os.path.join(os.path.dirname(name), target.partition("#")[0]))
                assert inside in files, (name, target)
    # every homework links to its chapter and to the kit's three files
    assert to_book >= (4 * len(subs.ASSIGNMENTS) if book else 0)


def test_a_locked_cell_whose_links_changed_keeps_a_checksum_nbgrader_accepts():
    from nbgrader.utils import compute_checksum

    files = kit.homework_files(subs.REPO / "exercises", "https://example.org/attention-course/")
    checked = 0
    for name, data in files.items():
        if name.endswith(".ipynb"):
            import nbformat

            for cell in nbformat.reads(data.decode(), as_version=4).cells:
                meta = cell.metadata.get("nbgrader", {})
                if meta.get("locked") and "checksum" in meta:
                    assert meta["checksum"] == compute_checksum(cell), (name, meta.get("grade_id"))
                    checked += 1
    assert checked >= len(subs.ASSIGNMENTS)


def _one_notebook(folder: Path, markdown: str, code: str = "x = 1") -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown), nbformat.v4.new_code_cell(code)])
    path = folder / "hw_x" / "hw_x.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))
    (path.parent / "data.csv").write_text("a\n")
    return path


def test_only_links_that_leave_the_zip_are_rewritten(tmp_path):
    markdown = (
        "See [the chapter](../../chapters/04_scaled_dot_product_attention.md#the-formula), "
        "![a figure](../../_static/logo.svg), [the data](data.csv), [up here](#top), "
        "[elsewhere](https://example.com/a.md) and "
        '<a href="../../kit/sdpa-course-homework.zip" download>the zip</a>.'
    )
    code = "# [the chapter](../../chapters/04_scaled_dot_product_attention.md)"
    path = _one_notebook(tmp_path / "exercises", markdown, code)
    before = path.read_bytes()
    book = "https://example.org/c/"
    files = kit.homework_files(tmp_path / "exercises", book)
    got = json.loads(files["hw_x/hw_x.ipynb"])
    assert _notebook_links(json.dumps(got)) == [
        book + "chapters/04_scaled_dot_product_attention.html#the-formula",
        book + "_static/logo.svg",
        "data.csv",
        "#top",
        "https://example.com/a.md",
        book + "kit/sdpa-course-homework.zip",
    ]
    assert "".join(got["cells"][1]["source"]) == code  # a code cell is the learner's, left alone
    assert files["hw_x/data.csv"] == b"a\n"
    assert path.read_bytes() == before  # only the zip's copy changes

    plain = json.loads(kit.homework_files(tmp_path / "exercises", None)["hw_x/hw_x.ipynb"])
    text = "".join(plain["cells"][0]["source"])
    assert _notebook_links(json.dumps(plain)) == ["data.csv", "#top", "https://example.com/a.md"]
    assert "the chapter (the course site's page chapters/04_scaled_dot_product_attention.html)" in text
    assert "the zip." in text


def test_a_link_to_nothing_the_book_or_the_zip_has_is_refused_by_name(tmp_path):
    _one_notebook(tmp_path / "exercises", "[lost](../hw_y/hw_y.ipynb)")
    with pytest.raises(kit.KitError, match=r"exercises/hw_x/hw_x.ipynb: the link '../hw_y/hw_y.ipynb' leads to no"):
        kit.homework_files(tmp_path / "exercises", "https://example.org/c/")


def test_nothing_is_rebuilt_when_the_inputs_are_unchanged(kit_dir, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in kit_dir.iterdir()}
    kit.build(kit_dir.parent)
    assert "up to date" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in kit_dir.iterdir()} == before


def _answered(release: dict, assignment: str) -> dict:
    """The release with its answer cells replaced by the source notebook's, and a last cell
    that says where the course's packages were imported from."""
    answers = {
        nbgrader_meta(c)["grade_id"]: "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in subs.source_notebook(assignment)["cells"]
        if nbgrader_meta(c).get("solution")
    }
    for cell in release["cells"]:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    release["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": "from sdpa_course import grading, lib\nprint('FROM', lib.__file__, grading.__file__)",
        }
    )
    return release


# One interpreter runs every notebook in turn, each in a fresh kernel started in the notebook's own folder.
RUNNER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import nbformat
    from nbclient import NotebookClient

    results = {}
    for path in map(Path, sys.argv[1:]):
        nb = nbformat.read(path, as_version=4)
        try:
            NotebookClient(
                nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
            ).execute()
        except Exception as exc:
            results[path.stem] = {"error": repr(exc)[-3000:]}
            continue
        out = []
        for cell in nb.cells:
            if cell.cell_type == "code":
                out.append("".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream"))
        results[path.stem] = {"outputs": out}
    print(json.dumps(results))
    """
)


def promised_pythons() -> list:
    """Each Python 3.11 or newer this machine has, once per version (the system's own, this one,
    any ``python3.N`` on PATH, and pyenv's), as the interpreter itself (not a launcher such as pyenv's shim)."""
    found: dict[str, str] = {}
    candidates = ["/usr/bin/python3", sys.executable, *(shutil.which(f"python3.{m}") for m in range(11, 20))]
    if shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        candidates += sorted(str(p) for p in Path(root).glob("versions/*/bin/python3")) if root else []
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        asked = "import sys; print(sys.executable); print('%d.%d.%d' % sys.version_info[:3])"
        got = subprocess.run([candidate, "-c", asked], capture_output=True, text=True)
        if got.returncode == 0:
            executable, version = got.stdout.splitlines()  # a path may hold spaces
            found.setdefault(version, executable)
    # The oldest release of each minor version: the one most likely to miss a package's floor.
    oldest: dict[tuple[int, ...], tuple[tuple[int, ...], str]] = {}
    for version, executable in found.items():
        number = tuple(map(int, version.split(".")))
        if number >= (3, 11) and (number[:2] not in oldest or number < oldest[number[:2]][0]):
            oldest[number[:2]] = (number, executable)
    # The default run takes the oldest of all, the likeliest to miss a package's floor; --matrix takes each.
    chosen = sorted(oldest.values())
    return [
        (pytest.param if at == 0 else matrix_only)(exe, id="python" + ".".join(map(str, number)))
        for at, (number, exe) in enumerate(chosen)
    ]


@pytest.mark.parametrize("python", promised_pythons())
def test_the_learners_lines_install_the_kit_and_run_the_homework(kit_dir, tmp_path, environment_assignments, python):
    # The hub image installs with the same two lines that end the learner's.
    docker = [line[4:] for line in (kit_dir / kit.DOCKERFILE).read_text().splitlines() if line.startswith("RUN ")]
    assert docker == kit.install_lines() == kit.learner_lines("unix")[-2:]
    download = tmp_path / "download"  # the learner's folder: the kit's files, downloaded
    download.mkdir()
    for name in (kit.REQUIREMENTS, kit.wheel_name(), kit.HOMEWORK_ZIP):
        shutil.copy2(kit_dir / name, download)
    own = tmp_path / "bin"  # this Python is the learner's python3
    own.mkdir()
    (own / "python3").symlink_to(python)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{own}{os.pathsep}{env.get('PATH', '')}"
    # The learner's own install compiles bytecode; the test need not pay for it.
    quiet = {"PIP_NO_COMPILE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_QUIET": "1"}
    started = time.monotonic()
    subprocess.run(
        ["bash", "-c", " && ".join(kit.learner_lines("unix"))], cwd=download, env={**env, **quiet}, check=True
    )
    print(f"kit installed for {python} in {time.monotonic() - started:.0f} s")
    venv = download / kit.VENV
    venv_python = venv / "bin" / "python"
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    work = tmp_path / "work"  # outside the repository
    with zipfile.ZipFile(download / kit.HOMEWORK_ZIP) as zf:
        zf.extractall(work)
    (work / "run.py").write_text(RUNNER)
    paths = [work / assignment / f"{assignment}.ipynb" for assignment in environment_assignments]
    for assignment, path in zip(environment_assignments, paths):
        path.write_text(json.dumps(_answered(json.loads(path.read_text()), assignment)))
        # A learner's own folder and files, named as the course's subpackages are, beside the notebook
        # (first on the kernel's path): the homework never imports them.
        for own_module in ("lib/__init__.py", "grading.py", "teaching/__init__.py"):
            planted = path.parent / own_module
            planted.parent.mkdir(exist_ok=True)
            planted.write_text(f"raise ImportError('the learner\\'s own {own_module} was imported')\n")
    done = subprocess.run(
        [str(venv_python), str(work / "run.py"), *map(str, paths)], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for assignment in environment_assignments:
        assert "error" not in results[assignment], (assignment, results[assignment].get("error"), done.stderr[-3000:])
        outputs = results[assignment]["outputs"]
        where = outputs[-1].split()
        assert where[0] == "FROM" and all(Path(p).is_relative_to(venv) for p in where[1:]), where
        assert not any(Path(p).is_relative_to(subs.REPO) for p in where[1:]), where
        report = outputs[-2]
        total = sum(c.points for c in grading.checks_for(assignment))
        assert before_submit_points(report) == (assignment, total, total), report
        assert sum(o.count("passed:") for o in outputs) >= 1, outputs


def test_the_welcome_page_and_every_homework_page_offer_the_kit_with_its_install_lines():
    import html
    import re

    from built_book import HTML, built_page

    pages = ["chapters/00_welcome.html"] + [f"exercises/{a}/{a}.html" for a in subs.ASSIGNMENTS]
    for page in pages:
        text = built_page(page)
        targets = {
            (HTML / page).parent.joinpath(href).resolve() for href in re.findall(r'href="([^"]*kit/[^"]+)"', text)
        }
        names = {p.name for p in targets}
        assert {kit.wheel_name(), kit.REQUIREMENTS, kit.HOMEWORK_ZIP} <= names, (page, names)
        assert all(p.is_file() and p.parent == (HTML / "kit").resolve() for p in targets), (page, targets)
        plain = html.unescape(re.sub(r"<[^>]+>", "", text))
        for line in kit.learner_lines("unix") + kit.learner_lines("windows"):
            assert line in plain, (page, line)
        if page == pages[0]:  # the welcome page also offers the exchange's extra and its lines
            assert kit.EXCHANGE_REQUIREMENTS in names, names
            for line in kit.exchange_lines(kit.EXAMPLE_ASSIGNMENT, kit.EXAMPLE_EXCHANGE):
                assert line in plain, line


def test_the_in_browser_jupyter_loads_the_kits_own_wheel():
    from built_book import HTML, built_page

    built_page("index.html")
    shipped = HTML / "lite" / "static" / "pyodide" / kit.wheel_name()
    assert shipped.is_file(), "the in-browser Jupyter ships no course wheel: run ./course build"
    assert shipped.read_bytes() == (HTML / "kit" / kit.wheel_name()).read_bytes()
