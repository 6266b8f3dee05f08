"""What makes the kernel's first start quick and quiet, made by Pyodide itself under Node.

- The bytecode of the modules the kernel imports as it starts and a chapter's
  first cell imports (:data:`STARTUP_IMPORTS`), compiled by Pyodide's own
  CPython (``bytecode.mjs`` runs ``bytecode_in_pyodide.py``): one wheel,
  ``course-bytecode``, that puts each pyc in the ``__pycache__`` beside its
  module, and the standard library's among them added to the runtime's
  ``python_stdlib.zip``. Without it the browser compiles IPython, jedi, numpy
  and pyplot on every first visit: 9 s more to a chapter's first output
  (``benchmarks/jupyterlite_first_output.py``).
- matplotlib's font cache (``font_cache.mjs``), as a wheel,
  ``course-mpl-fontlist``, that puts it where Pyodide's matplotlib looks: the
  first ``import matplotlib`` then writes no "Matplotlib is building the font
  cache" to stderr, which JupyterLab shows as an error box.

Node runs only when what they are made from changed (every file of the site's
Pyodide folder, these scripts, the modules imported): its output is kept in
``.lite-cache/startup/``.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from .places import CACHE, HERE, LiteBuildError
from .pyodide import site_lock, wheel_entry
from .wheels import record_line

FONTLIST_PACKAGE = "course-mpl-fontlist"
BYTECODE_PACKAGE = "course-bytecode"
# The version of the wheels made here.
SMALL_WHEEL_VERSION = "1.0"
# What the kernel imports before it reports ready (piplite, then pyodide_kernel:
# IPython, jedi, traitlets, ...) and what a chapter's first cell imports. Most
# chapters' first cell imports pyplot, which draws through the inline backend.
STARTUP_IMPORTS = (
    "piplite.piplite",
    "pyodide_kernel",
    "numpy",
    "sdpa_course.lib",
    "sdpa_course.teaching.figures",
    "sdpa_course.teaching.study",
    "matplotlib.pyplot",
    "matplotlib_inline.backend_inline",
)
SCRIPTS = (HERE / "font_cache.mjs", HERE / "bytecode.mjs", HERE / "bytecode_in_pyodide.py")
MADE = CACHE / "startup"
# A fixed date in the zips made here: the same files give the same bytes.
DATE = (2020, 1, 1, 0, 0, 0)

Wheels = tuple[dict[str, bytes], dict[str, dict]]  # file name -> bytes, lock name -> lock entry


def startup_wheels(files: dict[str, bytes], lock: dict, packages: dict[str, dict], installed: list[str]) -> Wheels:
    """The two wheels and ``python_stdlib.zip`` with the bytecode in it (file name ->
    bytes), and the wheels' lock entries, for the Pyodide folder ``files`` whose
    lock lists ``packages``; the bytecode is compiled with ``installed`` loaded."""
    made = made_by_node(files, lock, packages, installed)
    font = small_wheel(FONTLIST_PACKAGE, {"matplotlib/fontlist.json": (made / "fontlist.json").read_bytes()})
    site = {p.relative_to(made / "site").as_posix(): p.read_bytes() for p in sorted(made.glob("site/**/*.pyc"))}
    stdlib = {p.relative_to(made / "stdlib").as_posix(): p.read_bytes() for p in sorted(made.glob("stdlib/**/*.pyc"))}
    bytecode = small_wheel(BYTECODE_PACKAGE, site)
    out = {name: data for name, data in (font, bytecode)}
    out["python_stdlib.zip"] = added_to_zip(files["python_stdlib.zip"], stdlib)
    entries = {
        FONTLIST_PACKAGE: wheel_entry(font[0], font[1], FONTLIST_PACKAGE, SMALL_WHEEL_VERSION, [], ["matplotlib"]),
        BYTECODE_PACKAGE: wheel_entry(bytecode[0], bytecode[1], BYTECODE_PACKAGE, SMALL_WHEEL_VERSION, [], []),
    }
    return out, entries


def made_by_node(files: dict[str, bytes], lock: dict, packages: dict[str, dict], installed: list[str]) -> Path:
    """The folder holding ``fontlist.json``, ``site/`` and ``stdlib/`` (the pycs), made
    by Pyodide under Node, or kept from the last build made from the same inputs."""
    key = hashlib.sha256()
    for name in sorted(files):
        key.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    for script in SCRIPTS:
        key.update(script.read_bytes())
    key.update(",".join([*installed, "|", *STARTUP_IMPORTS]).encode())
    kept = MADE / key.hexdigest()[:16]
    if (kept / "fontlist.json").is_file():
        return kept
    MADE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=MADE) as scratch:
        pyodide, out = Path(scratch) / "pyodide", Path(scratch) / "made"
        out.mkdir()
        write_folder(pyodide, {**files, "pyodide-lock.json": site_lock(lock, packages)})
        node(HERE / "font_cache.mjs", f"{pyodide}/", str(out))
        font = small_wheel(FONTLIST_PACKAGE, {"matplotlib/fontlist.json": (out / "fontlist.json").read_bytes()})
        entry = wheel_entry(font[0], font[1], FONTLIST_PACKAGE, SMALL_WHEEL_VERSION, [], ["matplotlib"])
        write_folder(
            pyodide, {font[0]: font[1], "pyodide-lock.json": site_lock(lock, {**packages, FONTLIST_PACKAGE: entry})}
        )
        node(HERE / "bytecode.mjs", f"{pyodide}/", str(out), ",".join(installed), ",".join(STARTUP_IMPORTS))
        if not any(out.glob("site/**/*.pyc")) or not any(out.glob("stdlib/**/*.pyc")):
            raise LiteBuildError("Pyodide under Node compiled no bytecode of the startup modules")
        for old in MADE.iterdir():  # only the newest is kept
            if old.name != Path(scratch).name:
                shutil.rmtree(old)
        out.rename(kept)
    return kept


def write_folder(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def node(script: Path, *args: str) -> None:
    """Run a script of this package under Node (it loads Pyodide from ``_ext/node_modules``)."""
    result = subprocess.run(["node", str(script), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise LiteBuildError(
            f"node {script.name} failed (exit {result.returncode}):\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )


def small_wheel(package: str, files: dict[str, bytes]) -> tuple[str, bytes]:
    """A wheel made here that only adds ``files`` to site-packages: its file name and bytes."""
    name = package.replace("-", "_")
    dist = f"{name}-{SMALL_WHEEL_VERSION}.dist-info"
    files = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: {SMALL_WHEEL_VERSION}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lite\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [record_line(path, data) for path, data in files.items()]
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    return f"{name}-{SMALL_WHEEL_VERSION}-py3-none-any.whl", added_to_zip(None, files)


def added_to_zip(archive: bytes | None, files: dict[str, bytes]) -> bytes:
    """The zip ``archive`` (or a new one) with ``files`` written beside what it holds
    (none may be there already)."""
    buffer = io.BytesIO(archive or b"")
    if archive is not None:
        with zipfile.ZipFile(buffer) as z:
            clash = sorted(set(files) & set(z.namelist()))
        if clash:
            raise LiteBuildError(f"the zip already holds {clash[:5]}")
    with zipfile.ZipFile(buffer, "a" if archive is not None else "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=DATE), data, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()
