"""Compile the modules of wheels to bytecode, run inside Pyodide (``wheel_bytecode.mjs``).

Pyodide's own wheels and the pure-Python ones carry only ``.py`` files, so the
browser compiles every module the first time it is imported (seconds for
IPython and matplotlib). This writes, for each ``.py`` of a wheel, the
``__pycache__/<name>.cpython-312.pyc`` that Pyodide's CPython would write,
made by that same CPython, as an unchecked-hash pyc: Python loads it without
comparing it with the source's date, which an unpacked wheel does not keep.
The ``.py`` files stay, so tracebacks and ``inspect`` still show the source.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
import zipfile
from importlib._bootstrap_external import _code_to_hash_pyc  # type: ignore[attr-defined]


def compiled(name: str, source: bytes) -> bytes | None:
    """The unchecked-hash pyc of one module, or None if this Python cannot compile it."""
    try:
        with warnings.catch_warnings():
            # e.g. an invalid escape in a package's tests: Python would warn only if they ran
            warnings.simplefilter("ignore")
            code = compile(source, name, "exec", dont_inherit=True)
    except SyntaxError:
        return None  # a file for another Python version, never imported here
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))


def write_bytecode(wheel: str, out: str) -> int:
    """The pyc of every module of ``wheel`` under ``out``, where the wheel puts it
    in site-packages; returns how many."""
    count = 0
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            top = info.filename.split("/", 1)[0]
            if not info.filename.endswith(".py") or top.endswith((".data", ".dist-info")):
                continue
            pyc = compiled(info.filename, z.read(info))
            if pyc is None:
                continue
            path = os.path.join(out, importlib.util.cache_from_source(info.filename))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(pyc)
            count += 1
    return count
