"""Build the in-browser Jupyter into the site: stage what is the course's, then
``jupyter lite build``.

The course stages into JupyterLite's folder (``_build/jupyterlite``, its
``--lite-dir``) what JupyterLite's build then takes as its documentation says:

- ``static/pyodide/``: the Pyodide runtime (npm, pinned in
  ``_ext/package-lock.json``), the official wheels the course needs, each
  checked against the official ``pyodide-lock.json`` (:mod:`lite.pyodide`),
  the course's, the pinned and the kernel's own wheels (:mod:`lite.wheels`),
  the startup bytecode and matplotlib's font cache (:mod:`lite.startup`),
  and the site's ``pyodide-lock.json`` that lists them all;
- ``contents/``: the notebooks (:mod:`lite.contents`, :mod:`lite.markdown`)
  and the data files they read;
- the configuration files (:mod:`lite.settings`).

A file is written only when its bytes differ from what is there, and
JupyterLite's build keeps its doit database in that folder between builds: so
JupyterLite itself decides what to redo, and a build with nothing new rewrites
nothing in the site (this module says so: ``lite: unchanged``). The database is
dropped only when the built folder it describes is gone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from .contents import contents_files, markdown_targets
from .pins import fetch_pinned, read_pins
from .places import LITE_DIR, ROOT, LiteBuildError, write_if_changed
from .pyodide import CARRIER, official_lock, runtime_and_wheels, site_lock
from .settings import CONTENTS, PRELOAD, PYODIDE_URL, config_files
from .startup import BYTECODE_PACKAGE, startup_wheels
from .wheels import (
    COURSE_PACKAGE,
    KERNEL_PLUGIN,
    WIDGETS_FRONTEND,
    course_wheel,
    course_wheels,
    extra_wheels,
    kernel_extension_dir,
    kernel_wheels,
)

PYODIDE_DIR = "static/pyodide"
# The folders of JupyterLite's folder that hold only what the course stages.
STAGED_FOLDERS = (PYODIDE_DIR, CONTENTS)
DOIT_DB = ".jupyterlite.doit.db"


def staged_files(site: Path) -> dict[str, bytes]:
    """Every file the course puts in JupyterLite's folder: path there -> bytes."""
    pins = read_pins()
    pinned = fetch_pinned(pins)
    lock = official_lock()
    runtime, packages = runtime_and_wheels(pinned[CARRIER], lock)
    files = dict(runtime)
    for more, entries in (
        extra_wheels(pinned, pins),
        kernel_wheels(),
        course_wheels(course_wheel(site)),
    ):
        files.update(more)
        packages.update(entries)
    made, entries = startup_wheels(files, lock, packages, [name for name in PRELOAD if name != BYTECODE_PACKAGE])
    files.update(made)
    packages.update(entries)
    files["pyodide-lock.json"] = site_lock(lock, packages)
    staged = {f"{PYODIDE_DIR}/{name}": data for name, data in files.items()}
    staged.update({f"{CONTENTS}/{rel}": data for rel, data in contents_files(markdown_targets(site)).items()})
    extensions = [kernel_extension_dir(), pinned[WIDGETS_FRONTEND.lower()]]
    staged.update(config_files(site / "lite", extensions))
    return staged


def stage(lite_dir: Path, files: dict[str, bytes], output: Path) -> list[str]:
    """Make JupyterLite's folder hold ``files``: write what differs, remove from the
    staged folders what is no longer staged (and its copy among the built
    contents). Returns the paths written or removed."""
    changed = [rel for rel, data in sorted(files.items()) if write_if_changed(lite_dir / rel, data)]
    for folder in STAGED_FOLDERS:
        for path in sorted((lite_dir / folder).rglob("*")):
            rel = path.relative_to(lite_dir).as_posix()
            if path.is_file() and rel not in files:
                path.unlink()
                changed.append(rel)
                if rel.startswith(f"{CONTENTS}/"):
                    (output / "files" / rel.removeprefix(f"{CONTENTS}/")).unlink(missing_ok=True)
    return changed


def snapshot(output: Path) -> dict[str, tuple[int, int]]:
    """Each built file's (modification time, size)."""
    return {p.relative_to(output).as_posix(): (p.stat().st_mtime_ns, p.stat().st_size) for p in files_in(output)}


def files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def rewritten(output: Path, before: dict[str, tuple[int, int]], configs: dict[str, str]) -> list[str]:
    """The built files that ``jupyter lite build`` wrote anew. JupyterLite's patch
    tasks write its ``jupyter-lite.json`` files on every build: one that holds
    what it held before (``configs``) does not count."""
    after = snapshot(output)
    changed = sorted({*before, *after} - {k for k in before if before[k] == after.get(k)})
    return [
        rel
        for rel in changed
        if not (
            rel in configs and (output / rel).is_file() and (output / rel).read_text(encoding="utf-8") == configs[rel]
        )
    ]


def check_output(output: Path) -> None:
    """The built JupyterLite uses the site's own Pyodide and never PyPI."""
    config = json.loads((output / "jupyter-lite.json").read_text(encoding="utf-8"))
    settings = config["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]
    if settings.get("pyodideUrl") != PYODIDE_URL:
        raise LiteBuildError(
            f"{output}/jupyter-lite.json: pyodideUrl is {settings.get('pyodideUrl')!r}, not {PYODIDE_URL}"
        )
    if settings.get("disablePyPIFallback") is not True:
        raise LiteBuildError(f"{output}/jupyter-lite.json: the PyPI fallback is not switched off")
    for url in settings.get("pipliteUrls", []):
        if not url.startswith("./"):
            raise LiteBuildError(f"{output}/jupyter-lite.json: a wheel index outside the site: {url}")
    lock = json.loads((output / PYODIDE_DIR / "pyodide-lock.json").read_text(encoding="utf-8"))
    if COURSE_PACKAGE[0] not in lock["packages"]:
        raise LiteBuildError(f"{output}/{PYODIDE_DIR}/pyodide-lock.json does not list the course")


def jupyter_lite_build(lite_dir: Path) -> None:
    """JupyterLite's own build, in its folder (where it keeps its doit database)."""
    jupyter_lite = Path(sys.executable).parent / "jupyter-lite"
    result = subprocess.run(
        [str(jupyter_lite), "build", "--lite-dir", str(lite_dir)], cwd=lite_dir, capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-5000:] + result.stderr[-5000:])
        raise LiteBuildError(f"jupyter lite build failed (exit {result.returncode}); its output is above")


def build(site: Path, lite_dir: Path = LITE_DIR) -> list[str]:
    """Build ``<site>/lite``; returns the built files that changed (none: it was up to date)."""
    started = time.monotonic()
    if not (site / "index.html").is_file():
        raise LiteBuildError(f"{site}/index.html does not exist: build the book first")
    output = site / "lite"
    files = staged_files(site)
    if not (output / "jupyter-lite.json").is_file():
        # The database describes a built folder that is gone: start again.
        (lite_dir / DOIT_DB).unlink(missing_ok=True)
    staged = stage(lite_dir, files, output)
    before = snapshot(output)
    configs = {rel: (output / rel).read_text(encoding="utf-8") for rel in before if rel.endswith("jupyter-lite.json")}
    jupyter_lite_build(lite_dir)
    check_output(output)
    changed = rewritten(output, before, configs)
    where = output.relative_to(ROOT) if output.is_relative_to(ROOT) else output
    if not changed:
        print(f"lite: unchanged: JupyterLite's build found nothing new to write in {where}")
    else:
        size = sum(p.stat().st_size for p in files_in(output))
        notebooks = sum(rel.startswith(f"{CONTENTS}/") and rel.endswith(".ipynb") for rel in files)
        print(
            f"lite: {len(changed)} files written in {where} ({len(staged)} staged files new or gone; "
            f"{notebooks} notebooks, {size / 1e6:.0f} MB in all, {time.monotonic() - started:.0f} s)"
        )
    return changed
