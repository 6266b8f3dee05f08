"""A chapter runs again when a data file it reads or a module it imports changes, and only then.

The execution cache (jupyter-cache, ``execute_notebooks: cache``) keys a chapter
on its code alone, and Sphinx re-reads a page only when its source changes. A
chapter that reads a file (its ``.quiz.json`` and ``.cards.json``, ``tiny_lm.npz``,
a benchmark's results) would keep showing the old file after a change to it,
and a chapter that imports the course's own code (``import lib``, ``from
teaching.figures import heatmap``) would keep the numbers of the old code.

So, before Sphinx reads the sources, this extension takes for each page its
inputs and hashes their contents:

- the files its source names in quotes ("01_self_attention.quiz.json",
  "../benchmarks/results/attention_speed_memory.json": a relative path to a
  file that exists, inside the book);
- every module (``.py`` file) of each package of the book (a folder with an
  ``__init__.py``, such as ``sdpa_course/lib/`` and ``sdpa_course/teaching/``)
  that the page imports, and of each such package that those import in turn;
  a subpackage counts alone (``from sdpa_course import lib`` is ``sdpa_course/lib/``
  and ``sdpa_course/__init__.py``, not the graders beside it).

When that hash differs from the one of the last build, the page's records in
the execution cache are removed and the page is read again, so it is executed
with the current files. Contents, not modification times, decide: a file
rewritten with the same bytes runs nothing again.

The hashes live beside the execution cache (``chapter_data.json``), so that
removing the cache removes them too.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from nbgrader_tools.content_hash import files_hash

logger = logging.getLogger(__name__)

STATE_NAME = "chapter_data.json"
# A quoted relative path with a file extension: "x.quiz.json", '../a/b.json'.
QUOTED_PATH = re.compile(r"""["']([A-Za-z0-9_.][A-Za-z0-9_./-]*\.[A-Za-z0-9]+)["']""")
# An import statement at the start of a line of code: "import numpy as np, lib",
# "from sdpa_course import lib", "from sdpa_course.teaching.figures import heatmap".
IMPORT_LINE = re.compile(
    r"^[ \t]*(?:import[ \t]+([\w., \t]+)|from[ \t]+(\w[\w.]*)[ \t]+import[ \t]+\(?([\w, \t]*))", re.MULTILINE
)


def data_files(source: Path, root: Path) -> list[Path]:
    """The files inside ``root`` that ``source`` names by a quoted path relative to itself."""
    root = root.resolve()
    found = set()
    for match in QUOTED_PATH.finditer(source.read_text(encoding="utf-8")):
        path = (source.parent / match.group(1)).resolve()
        if path != source.resolve() and path.is_relative_to(root) and path.is_file():
            found.add(path)
    return sorted(found)


def _first_words(names: str) -> list[str]:
    """``"a.b as x, c"`` -> ``["a.b", "c"]``."""
    return [part.split()[0] for part in names.split(",") if part.split()]


def _imported_names(text: str) -> set[str]:
    """The dotted names that the import lines of ``text`` import (``from a import b`` gives ``a.b``)."""
    names = set()
    for plain, origin, imported in IMPORT_LINE.findall(text):
        names |= set(_first_words(plain)) if plain else {f"{origin}.{name}" for name in _first_words(imported)}
    return names


def _package_imports(package: Path) -> set[str]:
    """The dotted names that the modules of ``package`` import (absolute imports)."""
    names = set()
    for module in _modules(package):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _modules(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def module_files(source: Path, root: Path) -> list[Path]:
    """The modules of the book's packages that ``source`` imports, directly or through one another.

    A package counts whole: a page that imports ``lib`` depends on every
    module of ``sdpa_course/lib/``, since any of them may feed what it prints.
    """
    root = root.resolve()

    def local(name: str) -> list[Path]:
        """The book's package folders a dotted name goes through, outermost first."""
        folders: list[Path] = []
        for part in name.split("."):
            folder = (folders[-1] if folders else root) / part
            if not (folder / "__init__.py").is_file():
                break
            folders.append(folder)
        return folders

    todo = sorted(_imported_names(source.read_text(encoding="utf-8")))
    packages: set[Path] = set()  # imported whole
    parents: set[Path] = set()  # only their __init__.py runs
    while todo:
        folders = local(todo.pop())
        if not folders or folders[-1] in packages:
            continue
        packages.add(folders[-1])
        parents |= set(folders[:-1])
        todo += sorted(_package_imports(folders[-1]))
    files = {module for folder in packages for module in _modules(folder)}
    files |= {folder / "__init__.py" for folder in parents}
    return sorted(files)


def read_state(cache_dir: Path) -> dict[str, str]:
    try:
        state = json.loads((cache_dir / STATE_NAME).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return state if isinstance(state, dict) else {}


def write_state(cache_dir: Path, state: dict[str, str]) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / STATE_NAME).write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")


def forget_executions(cache_dir: Path, source: Path, root: Path) -> int:
    """Remove the execution cache's records of ``source``; returns how many.

    A record names the file it was executed from; a record made in another
    copy of the book (the same path below its root) counts too."""
    if not (cache_dir / "global.db").is_file():
        return 0
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_dir))
    own = str(source.resolve())
    tail = "/" + source.resolve().relative_to(root.resolve()).as_posix()
    removed = 0
    for record in cache.list_cache_records():
        if record.uri == own or record.uri.replace("\\", "/").endswith(tail):
            cache.remove_cache(record.pk)
            removed += 1
    return removed


def stale_pages(sources: dict[str, Path], root: Path, cache_dir: Path) -> tuple[list[str], dict[str, str]]:
    """The pages whose data files or imported modules changed since the last
    build (their cache records removed), and every page's current hash of them."""
    old = read_state(cache_dir)
    new: dict[str, str] = {}
    stale = []
    for docname, source in sorted(sources.items()):
        files = sorted(set(data_files(source, root)) | set(module_files(source, root)))
        if not files:
            continue
        new[docname] = files_hash(files, root)
        if old.get(docname) != new[docname]:
            # With no hash from a last build, a cached execution may have seen
            # other files: it goes too.
            if forget_executions(cache_dir, source, root) or docname in old:
                stale.append(docname)
    return stale, new


def _execution_cache(env: BuildEnvironment) -> Path | None:
    config = getattr(env, "mystnb_config", None)
    if config is None or config.execution_mode != "cache" or not config.execution_cache_path:
        return None
    return Path(config.execution_cache_path)


def on_get_outdated(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    cache_dir = _execution_cache(env)
    if cache_dir is None:
        return []
    sources = {docname: Path(env.doc2path(docname)) for docname in env.found_docs if docname not in removed}
    stale, new = stale_pages(sources, Path(app.srcdir), cache_dir)
    app.chapter_data_hashes = new  # type: ignore[attr-defined]
    for docname in stale:
        logger.info(
            f"chapter_data: {docname}: its data files or the modules it imports are not those of its cached run; "
            "it runs again"
        )
    return stale


def on_env_updated(app: Sphinx, env: BuildEnvironment) -> list[str]:
    # Written once every page is read: a build that stops earlier leaves the
    # old hashes, and the next build runs those pages again.
    cache_dir = _execution_cache(env)
    new = getattr(app, "chapter_data_hashes", None)
    if cache_dir is not None and new is not None:
        write_state(cache_dir, new)
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-get-outdated", on_get_outdated)
    app.connect("env-updated", on_env_updated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
