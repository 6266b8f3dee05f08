"""Whether the in-browser Jupyter must be built again: digests of its inputs and of
the built folder, compared with those the last build recorded."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
from pathlib import Path

import lite_markdown
from lite_paths import BYTECODE_SCRIPT, DATA_FILES, FONT_CACHE_SCRIPT, NPM_PYODIDE, PINS, ROOT
from lite_pins import sha256_of

# The build's own code: a change to any of it builds again.
BUILD_SCRIPTS = (
    "lite_build.py",
    "lite_paths.py",
    "lite_pins.py",
    "lite_pyodide.py",
    "lite_wheels.py",
    "lite_contents.py",
    "lite_service_worker.py",
    "lite_kernel_start.py",
    "lite_freshness.py",
    "offline_site.py",
    "lite_markdown.py",
    "wheel_bytecode.py",
)


def input_files(root: Path = ROOT) -> list[Path]:
    """Every file whose contents shape the built JupyterLite, but the course wheel."""
    here = Path(__file__).resolve().parent
    files = [
        root / PINS.relative_to(ROOT),
        root / NPM_PYODIDE.relative_to(ROOT) / "package.json",
        root / NPM_PYODIDE.relative_to(ROOT) / "pyodide-lock.json",
        *(here / name for name in BUILD_SCRIPTS),
        here / FONT_CACHE_SCRIPT.name,
        here / BYTECODE_SCRIPT.name,
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
