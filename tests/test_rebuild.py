"""A rebuild does only what changed.

- ``_ext/chapter_data.py``: a chapter runs again when a data file it reads
  or a module of the course's packages it imports changes (and not when
  nothing changed), tested on its own and on small MyST-NB books built with
  the execution cache in a temporary folder.
- ``_ext/static_freshness.py``: an edited file of the book's ``_static``
  reaches the built site, and the pages name its new checksum.
- ``lite.build`` (``_ext/lite/``): the in-browser Jupyter's build stages into
  JupyterLite's folder only the files whose bytes changed, so that JupyterLite's
  own doit (whose database is kept) redoes only what they feed, and it says
  "unchanged" when JupyterLite wrote nothing new.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nbgrader_tools.content_hash import files_hash

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / ".ci"))
from chapter_data import data_files, module_files, stale_pages  # noqa: E402
from check_nothing_rebuilt import what_ran  # noqa: E402
from lite.build import rewritten, snapshot, stage  # noqa: E402
from myst_page import myst_page  # noqa: E402


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_data_files_are_the_quoted_relative_paths_to_existing_files_inside_the_book(tmp_path):
    book = tmp_path / "book"
    quiz = write(book / "chapters" / "a.quiz.json", "[]")
    results = write(book / "results" / "r.json", "{}")
    write(tmp_path / "outside.json", "{}")
    chapter = write(
        book / "chapters" / "a.md",
        'show_quiz("a.quiz.json")\n'
        "data = Path('../results/r.json').read_text()\n"
        'load("missing.npz")\n'
        'open("../../outside.json")\n'
        "see results/r.json and `a.quiz.json` in the text\n",
    )
    assert data_files(chapter, book) == sorted([quiz, results])


def test_the_chapters_data_files_are_found():
    chapters = ROOT / "chapters"
    eight = {p.relative_to(ROOT).as_posix() for p in data_files(chapters / "08_online_softmax.md", ROOT)}
    assert eight == {
        "chapters/08_online_softmax.quiz.json",
        "chapters/08_online_softmax.cards.json",
        "benchmarks/results/attention_speed_memory.json",
    }
    eleven = {p.name for p in data_files(chapters / "11_a_tiny_model_that_reads.md", ROOT)}
    assert {"tiny_lm.npz", "11_a_tiny_model_that_reads.quiz.json"} <= eleven


def test_a_page_depends_on_every_module_of_the_packages_it_imports_and_of_those_they_import(tmp_path):
    book = tmp_path / "book"
    imported = [write(book / "lib" / "__init__.py", "from . import core\n"), write(book / "lib" / "core.py", "X = 1\n")]
    imported += [write(book / "helpers" / "__init__.py", ""), write(book / "helpers" / "deep" / "more.py", "")]
    write(book / "lib" / "uses.py", "import numpy\nfrom helpers.deep import more\n")
    imported.append(book / "lib" / "uses.py")
    write(book / "unused" / "__init__.py", "")
    write(book / "notapackage" / "mod.py", "")
    page = write(
        book / "chapters" / "a.md",
        "```{code-cell} ipython3\nimport numpy as np, lib\nfrom notapackage import mod\n```\n"
        "From unused import nothing: prose is not code.\n",
    )
    assert module_files(page, book) == sorted(imported)
    assert module_files(write(book / "chapters" / "b.md", "import unused\n"), book) == [book / "unused" / "__init__.py"]
    assert module_files(write(book / "chapters" / "c.md", "no code\n"), book) == []
    # a subpackage counts alone, with its parent's __init__.py (which runs when it is imported)
    course = [write(book / "course" / "__init__.py", ""), write(book / "course" / "sub" / "__init__.py", "")]
    write(book / "course" / "other" / "__init__.py", "")
    assert module_files(write(book / "chapters" / "d.md", "from course import sub\n"), book) == sorted(course)


def test_the_chapters_depend_on_lib_and_teaching():
    for chapter in ("06_causal_masking.md", "08_online_softmax.md"):
        modules = {p.relative_to(ROOT).as_posix() for p in module_files(ROOT / "chapters" / chapter, ROOT)}
        assert {"lib/attention.py", "lib/_checks.py", "teaching/figures.py", "teaching/study.py", "__init__.py"} <= {
            p.removeprefix("sdpa_course/") for p in modules
        }
        assert not any(p.startswith("sdpa_course/grading/") for p in modules)  # the graders are not the page's


def test_a_page_is_stale_when_a_module_it_imports_changes(tmp_path):
    module = write(tmp_path / "lib" / "__init__.py", "X = 1\n")
    write(tmp_path / "other" / "__init__.py", "Y = 1\n")
    page = write(tmp_path / "p.md", "import lib\nprint(lib.X)\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    stale, hashes = stale_pages({"p": page}, tmp_path, cache)
    (cache / "chapter_data.json").write_text(json.dumps(hashes), encoding="utf-8")
    write(tmp_path / "other" / "__init__.py", "Y = 2\n")  # not imported: nothing runs again
    assert stale_pages({"p": page}, tmp_path, cache)[0] == []
    module.write_text("X = 2\n", encoding="utf-8")
    assert stale_pages({"p": page}, tmp_path, cache)[0] == ["p"]


def test_the_content_hash_follows_names_and_contents_not_modification_times(tmp_path):
    data = write(tmp_path / "d.json", "[1]")
    first = files_hash([data], tmp_path)
    data.write_text("[1]", encoding="utf-8")  # rewritten, same bytes
    assert files_hash([data], tmp_path) == first
    data.write_text("[2]", encoding="utf-8")
    assert files_hash([data], tmp_path) != first
    data.write_text("[1]", encoding="utf-8")
    data.rename(tmp_path / "e.json")  # the same bytes under another name
    assert files_hash([tmp_path / "e.json"], tmp_path) != first


def test_a_page_is_stale_only_when_its_data_changed(tmp_path):
    write(tmp_path / "d.json", "[1]")
    page = write(tmp_path / "p.md", 'read("d.json")\n')
    plain = write(tmp_path / "q.md", "no data here\n")
    cache = tmp_path / "cache"
    stale, hashes = stale_pages({"p": page, "q": plain}, tmp_path, cache)
    assert stale == [] and list(hashes) == ["p"]  # first build: no record to doubt
    cache.mkdir()
    (cache / "chapter_data.json").write_text(json.dumps(hashes), encoding="utf-8")
    assert stale_pages({"p": page, "q": plain}, tmp_path, cache)[0] == []
    write(tmp_path / "d.json", "[2]")
    assert stale_pages({"p": page, "q": plain}, tmp_path, cache)[0] == ["p"]


PAGE = myst_page("A chapter", 'from pathlib import Path\nprint("data says", Path("data.txt").read_text())')


def build(src: Path, out: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture
def small_book(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A one-page MyST notebook that prints a file beside it, with the execution cache and chapter_data."""
    src = tmp_path / "src"
    write(src / "index.md", PAGE)
    write(src / "data.txt", "first")
    cache = tmp_path / "cache"
    write(
        src / "conf.py",
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        "extensions = ['myst_nb', 'chapter_data']\n"
        "nb_execution_mode = 'cache'\n"
        f"nb_execution_cache_path = {str(cache)!r}\n",
    )
    return src, tmp_path / "html", cache


def records(cache: Path) -> set[tuple[int, str]]:
    """The execution cache's records, each as its id and creation time."""
    from jupyter_cache import get_cache

    return {(record.pk, record.created.isoformat()) for record in get_cache(str(cache)).list_cache_records()}


def test_the_small_book_runs_again_when_its_data_changes_and_only_then(small_book):
    src, out, cache = small_book
    assert "Executing notebook" in build(src, out)
    assert "data says first" in (out / "index.html").read_text(encoding="utf-8")
    made = records(cache)
    assert len(made) == 1

    log = build(src, out)  # nothing changed
    assert "Executing notebook" not in log and records(cache) == made

    (src / "data.txt").write_text("first", encoding="utf-8")  # same bytes, new time
    log = build(src, out)
    assert "Executing notebook" not in log and records(cache) == made

    (src / "data.txt").write_text("second", encoding="utf-8")
    assert "Executing notebook" in build(src, out)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "data says second" in html and "data says first" not in html
    assert len(records(cache)) == 1 and records(cache).isdisjoint(made)


def test_a_change_to_lib_reaches_the_page_that_imports_it(small_book):
    """A copy of the course's lib beside a page that prints what it computes:
    a number changed in the copy's lib is on the page after a rebuild."""
    src, out, cache = small_book
    course = src / "sdpa_course"
    shutil.copytree(ROOT / "sdpa_course" / "lib", course / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "sdpa_course" / "__init__.py", course / "__init__.py")
    write(
        src / "index.md",
        myst_page(
            "A chapter",
            "from sdpa_course import lib\nex = lib.seed_toy_example()\n"
            'print("toy output", lib.scaled_dot_product_attention(ex["q"], ex["k"], ex["v"])[0, 0].round(4))',
        ),
    )

    def printed() -> float:
        found = re.findall(r"toy output ([0-9.]+)", (out / "index.html").read_text(encoding="utf-8"))
        assert len(found) == 1, found
        return float(found[0])

    def expected(v_first: float) -> float:  # seed 002's query and keys: scores 1/sqrt(2) and 0
        weight = 1 / (1 + math.exp(-1 / math.sqrt(2)))
        return weight * v_first + (1 - weight) * 4.0

    build(src, out)
    assert printed() == round(expected(2.0), 4)
    examples = course / "lib" / "examples.py"
    text = examples.read_text(encoding="utf-8")
    assert text.count('"v": np.array([[2.0, 3.0], [4.0, 5.0]])') == 1
    examples.write_text(text.replace('"v": np.array([[2.0, 3.0]', '"v": np.array([[12.0, 3.0]'), encoding="utf-8")
    assert "Executing notebook" in build(src, out)
    assert printed() == round(expected(12.0), 4)


def test_an_edited_static_file_reaches_the_built_site_and_its_pages(tmp_path):
    src, out = tmp_path / "src", tmp_path / "html"
    write(src / "index.rst", "A page\n======\n")
    script = write(src / "_static" / "cue.js", "var cue = 1;\n")
    write(
        src / "conf.py",
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        "extensions = ['static_freshness']\n"
        "html_static_path = ['_static']\n"
        "html_js_files = ['cue.js']\n",
    )

    def named_in_page() -> str:
        found = re.search(r"_static/cue\.js\?v=(\w+)", (out / "index.html").read_text(encoding="utf-8"))
        assert found, "the page does not load _static/cue.js"
        return found.group(1)

    build(src, out)
    first = named_in_page()
    assert (out / "_static" / "cue.js").read_text(encoding="utf-8") == "var cue = 1;\n"
    assert "no targets are out of date" in build(src, out)  # nothing changed: nothing written

    script.write_text("var cue = 2;\n", encoding="utf-8")
    log = build(src, out)
    assert "a static file changed" in log
    assert (out / "_static" / "cue.js").read_text(encoding="utf-8") == "var cue = 2;\n"
    assert named_in_page() != first
    assert "no targets are out of date" in build(src, out)


def test_staging_writes_only_what_differs_and_removes_what_is_no_longer_staged(tmp_path):
    """JupyterLite's doit decides what to redo from its inputs' modification times:
    a staged file left as it was keeps its time; a notebook no longer staged goes,
    with its copy in the built site."""
    lite_dir, output = tmp_path / "jupyterlite", tmp_path / "site" / "lite"
    files = {"contents/chapters/01_a.ipynb": b"{}", "contents/chapters/02_b.ipynb": b"{}", "jupyter-lite.json": b"{}"}
    assert stage(lite_dir, files, output) == sorted(files)
    kept = (lite_dir / "contents/chapters/01_a.ipynb").stat().st_mtime_ns
    write(output / "files" / "chapters" / "02_b.ipynb", "{}")  # what jupyter lite build made of it
    assert stage(lite_dir, files, output) == []
    assert (lite_dir / "contents/chapters/01_a.ipynb").stat().st_mtime_ns == kept
    files["contents/chapters/01_a.ipynb"] = b'{"changed": 1}'
    del files["contents/chapters/02_b.ipynb"]
    assert stage(lite_dir, files, output) == ["contents/chapters/01_a.ipynb", "contents/chapters/02_b.ipynb"]
    assert (lite_dir / "contents/chapters/01_a.ipynb").read_bytes() == b'{"changed": 1}'
    assert not (lite_dir / "contents/chapters/02_b.ipynb").exists()
    assert not (output / "files" / "chapters" / "02_b.ipynb").exists()
    assert (lite_dir / "jupyter-lite.json").is_file()  # outside the staged folders: left alone


def test_a_built_file_counts_as_rewritten_unless_it_holds_what_it_held(tmp_path):
    """JupyterLite's patch tasks write jupyter-lite.json on every build; the same
    text again is not a change, a new size or time of any other file is."""
    output = tmp_path / "lite"
    config = write(output / "jupyter-lite.json", '{"a": 1}')
    page = write(output / "files" / "a.ipynb", "{}")
    before = snapshot(output)
    configs = {"jupyter-lite.json": config.read_text(encoding="utf-8")}
    config.write_text('{"a": 1}', encoding="utf-8")
    os.utime(config, ns=(before["jupyter-lite.json"][0] + 10**9,) * 2)
    assert rewritten(output, before, configs) == []
    config.write_text('{"a": 2}', encoding="utf-8")
    page.write_text("{ }", encoding="utf-8")
    write(output / "files" / "b.ipynb", "{}")
    assert rewritten(output, before, configs) == ["files/a.ipynb", "files/b.ipynb", "jupyter-lite.json"]


QUIET_LOG = (
    "reading sources...\nUsing cached notebook: ID=3\n"
    "lite: unchanged: JupyterLite's build found nothing new to write in _build/html/lite\n"
)


def test_the_ci_check_passes_a_build_that_ran_nothing():
    assert what_ran(QUIET_LOG, {3: "/b/chapters/a.md"}, {3: "/b/chapters/a.md"}) == []


def test_the_ci_check_names_what_ran():
    log = "/b/chapters/c.md: Executing notebook using local CWD [mystnb]\nlite: 21 notebooks in lite (54 MB, 9 s)\n"
    problems = what_ran(log, {3: "/b/chapters/a.md"}, {3: "/b/chapters/a.md", 4: "/b/chapters/c.md"})
    assert len(problems) == 3
    assert problems[0] == "executed and cached: /b/chapters/c.md"
    assert "c.md: Executing notebook" in problems[1]
    assert "JupyterLite" in problems[2]
