"""JupyterLite's own configuration files for the course's in-browser Jupyter.

Three files in JupyterLite's folder (its ``--lite-dir``), each read by
``jupyter lite build`` as its documentation describes:

- ``jupyter_lite_config.json``: what the build puts in (the apps, the
  contents folder, the two browser extensions);
- ``jupyter-lite.json``: what the page is told (the kernel's settings: the
  site's own Pyodide, no PyPI, what Pyodide loads as it starts);
- ``overrides.json``: JupyterLab settings, here the File menu's *Download*
  (JupyterLite's own download command, which saves the notebook under its
  path in the drive: a homework sits at the top, so that is its file name).
"""

from __future__ import annotations

import json
from pathlib import Path

from .startup import BYTECODE_PACKAGE, FONTLIST_PACKAGE
from .wheels import KERNEL_PLUGIN

APPS = ["lab", "notebooks", "tree"]
CONTENTS = "contents"
PYODIDE_URL = "./static/pyodide/pyodide.js"
# What Pyodide loads as it starts: what the kernel would otherwise install one
# after another (the names its worker asks for: micropip, piplite, ssl,
# sqlite3, ipykernel, comm, pyodide_kernel, jedi, ipython), and what every
# chapter's first cell imports (numpy, matplotlib, the course, the widgets), and
# what makes that start quick and quiet (lite.startup).
PRELOAD = (
    "micropip",
    "piplite",
    "ssl",
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
    FONTLIST_PACKAGE,
    BYTECODE_PACKAGE,
)
# JupyterLab's export to other formats needs a Jupyter server's nbconvert: in
# JupyterLite its submenu (File > Save and Export Notebook As) is empty.
DISABLED = ["@jupyterlab/notebook-extension:export"]
# File > Download, below File > Save, in every app.
DOWNLOAD_COMMAND = "docmanager:download"
OVERRIDES = {
    "@jupyterlab/mainmenu-extension:plugin": {
        "menus": [{"id": "jp-mainmenu-file", "items": [{"command": DOWNLOAD_COMMAND, "rank": 6}]}]
    }
}


def config_files(output: Path, extensions: list[Path], preload: tuple[str, ...] = PRELOAD) -> dict[str, bytes]:
    """The three files (name in JupyterLite's folder -> bytes) for a site built into ``output``."""
    build = {
        "LiteBuildConfig": {
            "apps": APPS,
            "contents": [CONTENTS],
            "output_dir": str(output),
            "no_sourcemaps": True,
            "no_unused_shared_packages": True,
            # Only these browser extensions: the desktop's (jupytext, nbgrader, a
            # newer widget manager) are built for another JupyterLab.
            "ignore_sys_prefix": ["federated_extensions"],
            "federated_extensions": [str(path) for path in extensions],
        }
    }
    page = {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "Scaled dot-product attention (in the browser)",
            # window.jupyterapp: the browser tests drive the notebook through it.
            "exposeAppInBrowser": True,
            "disabledExtensions": DISABLED,
            "litePluginSettings": {
                KERNEL_PLUGIN: {
                    # Named here, not only by the Pyodide addon's patch of the built
                    # file, so that no build can leave it out.
                    "pyodideUrl": PYODIDE_URL,
                    "disablePyPIFallback": True,
                    "loadPyodideOptions": {"packages": list(preload)},
                }
            },
        },
    }
    return {name: (json.dumps(data, indent=2) + "\n").encode() for name, data in _named(build, page).items()}


def _named(build: dict, page: dict) -> dict[str, dict]:
    return {"jupyter_lite_config.json": build, "jupyter-lite.json": page, "overrides.json": OVERRIDES}
