"""Start the in-browser kernel without the ``ssl`` package.

The Pyodide kernel's worker (``@jupyterlite/pyodide-kernel`` 0.6) names the
packages it must have before it starts, ``ssl`` among them, and installs any of
them that Pyodide did not already load. ``ssl`` brings the OpenSSL shared
libraries (a 2 MB archive) that the browser downloads, unpacks and compiles on
every start, and nothing in the kernel or the course uses them: a kernel in a
browser opens no sockets, and asyncio and http.client only import ``ssl`` if
they can. This edits the built kernel extension's scripts so that the list no
longer names ``ssl``; the site's own list (``PRELOAD`` in ``lite_build.py``) does
not name it either. A learner who wants it can still ``%pip install ssl``.
"""

from __future__ import annotations

from pathlib import Path

from lite_paths import LiteBuildError

# The list in the kernel worker of pyodide-kernel 0.6, before and after the edit.
NEEDED = '["ssl","sqlite3","ipykernel","comm","pyodide_kernel","jedi","ipython"]'
WITHOUT_SSL = '["sqlite3","ipykernel","comm","pyodide_kernel","jedi","ipython"]'
KERNEL_EXTENSION = Path("extensions") / "@jupyterlite" / "pyodide-kernel-extension" / "static"


def start_without_ssl(output: Path) -> None:
    """Edit the kernel extension's scripts under ``output`` (the built JupyterLite)
    as the module says; a build whose scripts do not hold the list stops (a new
    pyodide-kernel)."""
    folder = output / KERNEL_EXTENSION
    edited = []
    for script in sorted(folder.glob("*.js")):
        text = script.read_text(encoding="utf-8")
        if NEEDED in text:
            script.write_text(text.replace(NEEDED, WITHOUT_SSL), encoding="utf-8")
            edited.append(script.name)
    if not edited:
        raise LiteBuildError(
            f"no script in {folder} holds {NEEDED}: a pyodide-kernel other than 0.6 built it; "
            "check _ext/lite_kernel_start.py against it"
        )
