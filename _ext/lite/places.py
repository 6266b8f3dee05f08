"""Where the in-browser Jupyter's build reads and writes, and the error it stops with."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PINS = ROOT / "requirements" / "lite.txt"
# The wheels pip downloads for the build (requirements/lite.txt), kept between builds.
CACHE = ROOT / ".lite-cache"
# JupyterLite's own folder (its --lite-dir): what the build stages for `jupyter lite
# build`, and that tool's doit database (.jupyterlite.doit.db), kept between builds.
LITE_DIR = ROOT / "_build" / "jupyterlite"
NPM_PYODIDE = ROOT / "_ext" / "node_modules" / "pyodide"
# Files the notebooks read, relative to the course root (copied with the same layout).
DATA_FILES = ("benchmarks/results/attention_speed_memory.json",)


class LiteBuildError(RuntimeError):
    """The in-browser Jupyter could not be built; the message says why."""


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` unless it already holds exactly that; whether it wrote.

    A file left as it was keeps its modification time, so JupyterLite's doit
    sees nothing new in it.
    """
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True
