"""Compiled bytecode for the grader's own packages, so the sandbox does not compile them on every run.

The sandbox sees ``grading`` (and, in the record run, ``lib``) as read-only
files under ``/grader``, without ``__pycache__``: the learner's interpreter
would compile every module of them again at each import, and could not save
the result. :func:`pycache_binds` compiles each file once per grader process,
into a private folder of the grader (read-only to everyone else), and gives
the ``__pycache__`` file it belongs at beside the bound source. The compiled
files come from the grader's own sources, never from a learner's run, so two
learners' processes still share nothing: each gets the same read-only bytes
it would have compiled itself. A changed source (new size or time) is compiled
again; Python checks the bound source's time and size against the file too.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import py_compile
import shutil
import sys
import tempfile
import threading
from pathlib import Path, PurePosixPath

_lock = threading.Lock()
_folder: Path | None = None


def _cache_folder() -> Path:
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="classgrader-pyc-"))
        os.chmod(_folder, 0o755)
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def compiled(source: Path, shown_as: str) -> Path | None:
    """The bytecode of ``source`` (compiled once; tracebacks name ``shown_as``), or None if it does not compile."""
    st = source.stat()
    key = hashlib.sha256(f"{source.resolve()}\0{st.st_mtime_ns}\0{st.st_size}\0{shown_as}".encode()).hexdigest()
    with _lock:
        target = _cache_folder() / f"{key[:24]}.pyc"
        if not target.exists():
            try:
                py_compile.compile(
                    str(source),
                    cfile=str(target),
                    dfile=shown_as,
                    doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
                )
            except py_compile.PyCompileError:
                return None
            os.chmod(target, 0o644)
    return target


def pycache_binds(files: dict[str, Path], root: str) -> dict[str, Path]:
    """For each module ``rel -> source`` bound at ``root/rel``: where its bytecode goes -> the compiled file."""
    binds = {}
    for rel, source in files.items():
        rel_path = PurePosixPath(rel)
        if rel_path.suffix != ".py":
            continue
        inside = PurePosixPath(root) / rel_path
        pyc = compiled(source, str(inside))
        if pyc is not None:
            binds[str(inside.parent / "__pycache__" / f"{inside.stem}.{sys.implementation.cache_tag}.pyc")] = pyc
    return binds
