"""The wheels added to the site's Pyodide lock beside Pyodide's own: the course's,
the pinned pure-Python ones (their CDN addresses pointed at the site), the
kernel's own, and matplotlib's font cache made under Node."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from lite_paths import BYTECODE_SCRIPT, FONT_CACHE_SCRIPT, LiteBuildError
from lite_pins import Pin
from lite_pyodide import wheel_entry

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
    ["lib", "teaching", "grading"],
    ["numpy", "matplotlib", "jupyterquiz", "jupytercards", "ipywidgets"],
)
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
# The kernel's own wheels, shipped with jupyterlite-pyodide-kernel: lock name ->
# (import names, lock dependencies).
KERNEL_WHEELS: dict[str, tuple[list[str], list[str]]] = {
    "piplite": (["piplite"], ["micropip"]),
    "ipykernel": (["ipykernel"], ["comm", "ipython"]),
    # not ssl, which the kernel does not use (_ext/lite_kernel_start.py)
    "pyodide-kernel": (["pyodide_kernel"], ["ipykernel", "ipython", "comm", "sqlite3", "jedi"]),
}
# The wheel that holds matplotlib's font cache.
FONTLIST_PACKAGE = "course-mpl-fontlist"
# The wheel that holds the bytecode of the modules the kernel imports as it starts.
BYTECODE_PACKAGE = "course-bytecode"
# The version of the wheels made here (the font cache, the bytecode).
SMALL_WHEEL_VERSION = "1.0"


def course_wheel(site: Path) -> Path:
    """The learner kit's course wheel (``nbgrader_tools.kit``: lib, teaching, grading and
    nothing else), made into the site if needed."""
    from nbgrader_tools import kit

    return kit.build(site) / kit.wheel_name()


def stage_course_wheel(target: Path, wheel: Path) -> dict:
    """The course wheel copied into target; returns its lock entry."""
    shutil.copy2(wheel, target / wheel.name)
    name, imports, depends = COURSE_PACKAGE
    version = wheel.name.split("-")[1]
    return wheel_entry(target / wheel.name, name, version, imports, depends)


def stage_extras(target: Path, wheels: dict[str, Path], pins: dict[str, Pin]) -> dict[str, dict]:
    entries = {}
    for key, (imports, depends) in EXTRA_PACKAGES.items():
        copy_rewriting_cdn(wheels[key], target / wheels[key].name)
        entries[key] = wheel_entry(target / wheels[key].name, key, pins[key].version, imports, depends)
    return entries


def kernel_extension_dir() -> Path:
    """The installed jupyterlite-pyodide-kernel browser extension (with its wheels in static/pypi)."""
    folder = Path(sys.prefix) / "share/jupyter/labextensions" / KERNEL_PLUGIN.split(":")[0]
    if not (folder / "package.json").is_file():
        raise LiteBuildError(f"jupyterlite-pyodide-kernel is not installed in {sys.prefix} (run ./course build)")
    return folder


def stage_kernel_wheels(target: Path) -> dict[str, dict]:
    """The kernel's own wheels copied into target; returns their lock entries."""
    pypi = kernel_extension_dir() / "static" / "pypi"
    entries = {}
    for name, (imports, depends) in KERNEL_WHEELS.items():
        stem = name.replace("-", "_")
        found = sorted(pypi.glob(f"{stem}-*-py3-none-any.whl"))
        if len(found) != 1:
            raise LiteBuildError(f"want one {stem} wheel in {pypi}, found {[p.name for p in found]}")
        shutil.copy2(found[0], target / found[0].name)
        version = found[0].name.split("-")[1]
        entries[name] = wheel_entry(target / found[0].name, name, version, imports, depends)
    return entries


def record_line(path: str, data: bytes) -> str:
    """A wheel's RECORD line for one file: its path, sha256 (urlsafe base64, unpadded) and size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def stage_font_cache(target: Path) -> dict:
    """matplotlib's font cache, made by Pyodide's own matplotlib under Node, as a wheel in target.

    ``target`` must already hold the Pyodide runtime and a lock with matplotlib.
    Returns the wheel's lock entry.
    """
    made = target.parent / "fontlist"
    made.mkdir()
    result = subprocess.run(
        ["node", str(FONT_CACHE_SCRIPT), f"{target.resolve()}/", str(made.resolve())],
        capture_output=True,
        text=True,
    )
    cache = made / "fontlist.json"
    if result.returncode != 0 or not cache.is_file():
        raise LiteBuildError(
            f"making matplotlib's font cache in Pyodide under Node failed (exit {result.returncode}):\n"
            f"{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    wheel = small_wheel(target, FONTLIST_PACKAGE, {"matplotlib/fontlist.json": cache.read_bytes()})
    return wheel_entry(wheel, FONTLIST_PACKAGE, SMALL_WHEEL_VERSION, [], ["matplotlib"])


def stage_bytecode(target: Path, packages: list[str], modules: tuple[str, ...]) -> dict:
    """The bytecode of what importing ``modules`` loads from the wheels in target
    (``_ext/wheel_bytecode.py``), compiled by Pyodide's CPython under Node with
    ``packages`` installed, as one wheel in target that puts each pyc where the
    module's own wheel puts the module. Returns that wheel's lock entry.

    ``target`` must already hold the Pyodide runtime and a lock with ``packages``.
    Loaded with the others when the kernel starts, it spares the browser compiling
    IPython, jedi and numpy on every first visit, which took most of the time to a
    ready kernel. The verified wheels are left as they are. The bytecode of the
    standard library's modules among them is added to the runtime's
    ``python_stdlib.zip`` in target (which holds only sources), where zipimport
    finds it.
    """
    made = target.parent / "bytecode"
    made.mkdir()
    result = subprocess.run(
        [
            "node",
            str(BYTECODE_SCRIPT),
            f"{target.resolve()}/",
            str(made.resolve()),
            ",".join(packages),
            ",".join(modules),
        ],
        capture_output=True,
        text=True,
    )
    files = {p.relative_to(made / "site").as_posix(): p.read_bytes() for p in sorted(made.glob("site/**/*.pyc"))}
    stdlib = {p.relative_to(made / "stdlib").as_posix(): p.read_bytes() for p in sorted(made.glob("stdlib/**/*.pyc"))}
    if result.returncode != 0 or not files or not stdlib:
        raise LiteBuildError(
            f"compiling the startup modules' bytecode in Pyodide under Node failed (exit {result.returncode}):\n"
            f"{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    add_to_zip(target / "python_stdlib.zip", stdlib)
    wheel = small_wheel(target, BYTECODE_PACKAGE, files)
    return wheel_entry(wheel, BYTECODE_PACKAGE, SMALL_WHEEL_VERSION, [], [])


def add_to_zip(archive: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` into the zip ``archive`` beside what it holds (none may be there already)."""
    with zipfile.ZipFile(archive) as z:
        clash = sorted(set(files) & set(z.namelist()))
    if clash:
        raise LiteBuildError(f"{archive.name} already holds {clash[:5]}")
    with zipfile.ZipFile(archive, "a", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)


def small_wheel(target: Path, package: str, files: dict[str, bytes]) -> Path:
    """A wheel made here that only adds ``files`` to site-packages, written into target."""
    name = package.replace("-", "_")
    dist = f"{name}-{SMALL_WHEEL_VERSION}.dist-info"
    files = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: {SMALL_WHEEL_VERSION}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lite_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [record_line(path, data) for path, data in files.items()]
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    wheel = target / f"{name}-{SMALL_WHEEL_VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            # A fixed date: the same files give the same wheel, byte for byte.
            z.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return wheel


def copy_rewriting_cdn(wheel: Path, out: Path) -> None:
    """Copy a wheel, pointing its CDN addresses at the site's own copies.

    jupyterquiz and jupytercards load MathJax from a CDN when the page has no
    full MathJax (JupyterLite's is internal): the same addresses that
    offline_site rewrites in the book's pages lead to the site's MathJax here.
    The wheel's RECORD is updated to the new files' hashes and sizes.
    """
    from offline_site import BODY_REWRITES

    # Files under lite/ are two folders below the site root (lite/notebooks/index.html).
    rewrites = {remote.encode(): f"../../{local}".encode() for remote, local in BODY_REWRITES.items()}
    with zipfile.ZipFile(wheel) as src:
        files = {info.filename: src.read(info) for info in src.infolist()}
    changed = {}
    for name, data in files.items():
        new = data
        for remote, local in rewrites.items():
            new = new.replace(remote, local)
        if new != data:
            files[name] = changed[name] = new
    record = next(name for name in files if name.endswith(".dist-info/RECORD"))
    lines = []
    for line in files[record].decode().splitlines():
        name = line.split(",", 1)[0]
        if name in changed:
            line = record_line(name, changed[name])
        lines.append(line)
    files[record] = ("\n".join(lines) + "\n").encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in files.items():
            dst.writestr(name, data)
