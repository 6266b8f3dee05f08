"""The wheels added to the site's Pyodide lock beside Pyodide's own: the course's,
the pinned pure-Python ones (their CDN addresses pointed at the site) and the
kernel's own."""

from __future__ import annotations

import base64
import hashlib
import io
import sys
import zipfile
from pathlib import Path

from .pins import Pin
from .places import LiteBuildError
from .pyodide import wheel_entry

# Pure-Python wheels added to the lock: pinned name -> (import names, lock dependencies).
EXTRA_PACKAGES: dict[str, tuple[list[str], list[str]]] = {
    "comm": (["comm"], []),
    "ipywidgets": (["ipywidgets"], ["comm", "traitlets", "ipython"]),
    "jupyterquiz": (["jupyterquiz"], ["ipython"]),
    "jupytercards": (["jupytercards"], ["ipython"]),
}
# The browser (frontend) side of the widgets, for the JupyterLite app.
WIDGETS_FRONTEND = "jupyterlab_widgets"
# teaching imports jupyterquiz, jupytercards and (for the live explorers)
# ipywidgets inside its functions, where Pyodide's import scan cannot see
# them: they load with the course.
COURSE_PACKAGE = (
    "sdpa-course",
    ["sdpa_course"],
    ["numpy", "matplotlib", "jupyterquiz", "jupytercards", "ipywidgets"],
)
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
# The kernel's own wheels, shipped with jupyterlite-pyodide-kernel: lock name ->
# (import names, lock dependencies).
KERNEL_WHEELS: dict[str, tuple[list[str], list[str]]] = {
    "piplite": (["piplite"], ["micropip"]),
    "ipykernel": (["ipykernel"], ["comm", "ipython"]),
    "pyodide-kernel": (["pyodide_kernel"], ["ipykernel", "ipython", "comm", "sqlite3", "jedi"]),
}

Wheels = tuple[dict[str, bytes], dict[str, dict]]  # file name -> bytes, lock name -> lock entry


def course_wheel(site: Path) -> Path:
    """The learner kit's course wheel (``nbgrader_tools.kit``: lib, teaching, grading and
    nothing else), made into the site if needed."""
    from nbgrader_tools import kit

    return kit.build(site) / kit.wheel_name()


def course_wheels(wheel: Path) -> Wheels:
    """The course wheel and its lock entry."""
    data = wheel.read_bytes()
    name, imports, depends = COURSE_PACKAGE
    return {wheel.name: data}, {name: wheel_entry(wheel.name, data, name, wheel.name.split("-")[1], imports, depends)}


def extra_wheels(wheels: dict[str, Path], pins: dict[str, Pin]) -> Wheels:
    """The pinned pure-Python wheels, their CDN addresses pointed at the site, and their lock entries."""
    files, entries = {}, {}
    for key, (imports, depends) in EXTRA_PACKAGES.items():
        data = rewriting_cdn(wheels[key])
        files[wheels[key].name] = data
        entries[key] = wheel_entry(wheels[key].name, data, key, pins[key].version, imports, depends)
    return files, entries


def kernel_extension_dir() -> Path:
    """The installed jupyterlite-pyodide-kernel browser extension (with its wheels in static/pypi)."""
    folder = Path(sys.prefix) / "share/jupyter/labextensions" / KERNEL_PLUGIN.split(":")[0]
    if not (folder / "package.json").is_file():
        raise LiteBuildError(f"jupyterlite-pyodide-kernel is not installed in {sys.prefix} (run ./course build)")
    return folder


def kernel_wheels() -> Wheels:
    """The kernel's own wheels and their lock entries."""
    pypi = kernel_extension_dir() / "static" / "pypi"
    files, entries = {}, {}
    for name, (imports, depends) in KERNEL_WHEELS.items():
        stem = name.replace("-", "_")
        found = sorted(pypi.glob(f"{stem}-*-py3-none-any.whl"))
        if len(found) != 1:
            raise LiteBuildError(f"want one {stem} wheel in {pypi}, found {[p.name for p in found]}")
        data = found[0].read_bytes()
        files[found[0].name] = data
        entries[name] = wheel_entry(found[0].name, data, name, found[0].name.split("-")[1], imports, depends)
    return files, entries


def record_line(path: str, data: bytes) -> str:
    """A wheel's RECORD line for one file: its path, sha256 (urlsafe base64, unpadded) and size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def rewriting_cdn(wheel: Path) -> bytes:
    """A wheel's bytes, its CDN addresses pointed at the site's own copies.

    jupyterquiz and jupytercards load MathJax from a CDN when the page has no
    full MathJax (JupyterLite's is internal): the same addresses that
    offline_site rewrites in the book's pages lead to the site's MathJax here.
    The wheel's RECORD is updated to the new files' hashes and sizes.
    """
    from offline_site import BODY_REWRITES

    # Files under lite/ are two folders below the site root (lite/notebooks/index.html).
    rewrites = {remote.encode(): f"../../{local}".encode() for remote, local in BODY_REWRITES.items()}
    with zipfile.ZipFile(wheel) as src:
        infos = src.infolist()
        files = {info.filename: src.read(info) for info in infos}
    changed = {}
    for name, data in files.items():
        new = data
        for remote, local in rewrites.items():
            new = new.replace(remote, local)
        if new != data:
            files[name] = changed[name] = new
    if not changed:
        return wheel.read_bytes()
    record = next(name for name in files if name.endswith(".dist-info/RECORD"))
    lines = []
    for line in files[record].decode().splitlines():
        name = line.split(",", 1)[0]
        if name in changed:
            line = record_line(name, changed[name])
        lines.append(line)
    files[record] = ("\n".join(lines) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in infos:  # each file's own date and mode: the same bytes, build after build
            dst.writestr(info, files[info.filename], zipfile.ZIP_DEFLATED)
    return out.getvalue()
