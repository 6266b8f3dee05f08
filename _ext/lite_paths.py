"""Where the in-browser Jupyter's build (``lite_build.py``) reads and writes, and
the error it stops with."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "requirements" / "lite.txt"
CACHE = ROOT / ".lite-cache"
WORK = ROOT / "_build" / "lite-work"
# What the last build was made from (written last, once the build succeeded).
STAMP = WORK / "built-from.json"
NPM_PYODIDE = ROOT / "_ext" / "node_modules" / "pyodide"
FONT_CACHE_SCRIPT = Path(__file__).resolve().parent / "mpl_font_cache.mjs"
BYTECODE_SCRIPT = Path(__file__).resolve().parent / "wheel_bytecode.mjs"
# Files the notebooks read, relative to the course root (copied with the same layout).
DATA_FILES = ("benchmarks/results/attention_speed_memory.json",)


class LiteBuildError(RuntimeError):
    """The in-browser Jupyter could not be built; the message says why."""
