"""Compile the modules the kernel imports as it starts to bytecode, run inside
Pyodide (``bytecode.mjs``).

Pyodide's own wheels and the pure-Python ones carry only ``.py`` files, so the
browser compiles every module the first time it is imported (seconds for
IPython and jedi, which the kernel imports before it is ready), and so does
Pyodide's standard library, whose zip holds only sources. This imports
the given modules in Pyodide, with the site's wheels installed, and writes for
each module then loaded from site-packages the
``__pycache__/<name>.cpython-312.pyc`` that Pyodide's CPython would write,
made by that same CPython, as an unchecked-hash pyc: Python loads it without
comparing it with the source's date, which an unpacked wheel does not keep;
for a module of the standard library, the ``<name>.pyc`` that zipimport looks
for beside ``<name>.py`` in the zip.
Only those modules: the bytecode of every module of every wheel is 12 MB,
about four times what the kernel's start and a chapter's first cell import,
and a learner's first visit downloads all of it. The ``.py`` files stay, so
tracebacks and ``inspect`` still show the source.
"""

from __future__ import annotations

import importlib
import importlib.util
import marshal
import os
import sys
import warnings
from typing import Any


def compiled(name: str, source: bytes) -> bytes | None:
    """The unchecked-hash pyc of one module, or None if this Python cannot compile it."""
    try:
        with warnings.catch_warnings():
            # e.g. an invalid escape in a package's tests: Python would warn only if they ran
            warnings.simplefilter("ignore")
            code = compile(source, name, "exec", dont_inherit=True)
    except SyntaxError:
        return None  # a file for another Python version, never imported here
    # PEP 552's hash-based pyc: magic, flags (hash-based, unchecked), source hash, code.
    flags = 0b01
    return (
        importlib.util.MAGIC_NUMBER
        + flags.to_bytes(4, "little")
        + importlib.util.source_hash(source)
        + marshal.dumps(code)
    )


def write_bytecode(modules: list[str], site_packages: str, out: str) -> int:
    """Import ``modules``; the pyc of every module then loaded from ``site_packages``
    under ``<out>/site``, laid out as in site-packages, and of every module then
    loaded from the standard library's zip under ``<out>/stdlib``, laid out as in
    that zip (``<name>.pyc`` beside ``<name>.py``, where zipimport looks for it);
    returns how many."""
    stdout, stderr = sys.stdout, sys.stderr
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        sys.stdout, sys.stderr = stdout, stderr  # the kernel's module replaces them
    roots = {os.path.join(site_packages, ""): "site"}
    roots.update({os.path.join(entry, ""): "stdlib" for entry in sys.path if entry.endswith(".zip")})
    count = 0
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        loader: Any = getattr(module, "__loader__", None)
        if not isinstance(path, str) or not path.endswith(".py") or not hasattr(loader, "get_data"):
            continue  # no source, or frozen into the interpreter (already bytecode)
        root = next((r for r in roots if path.startswith(r)), None)
        if root is None:
            continue  # neither site-packages nor the standard library's zip
        source = loader.get_data(path)  # from the zip, or the file
        pyc = compiled(path, source)
        if pyc is None:
            continue
        relative = path[len(root) :]
        place = importlib.util.cache_from_source(relative) if roots[root] == "site" else relative + "c"
        target = os.path.join(out, roots[root], place)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(pyc)
        count += 1
    return count
