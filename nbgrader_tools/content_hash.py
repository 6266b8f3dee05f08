"""One hash of a set of files: each one's path below a root, and its bytes.

Every stamp and key the course keeps of its own files is this hash: the class
grader's record of the inputs a class was graded under
(:mod:`classgrader.pipeline.fingerprint`), the learner kit's inputs
(:mod:`nbgrader_tools.kit`), the data and modules each chapter reads
(``_ext/chapter_data.py``) and the book's own static files
(``_ext/static_freshness.py``). It follows contents, never modification times,
so a checkout or a copy of the same files gives the same hash. Settings and
other values are hashed by :func:`text_hash`, as canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path


def files_hash(paths: Iterable[Path], root: Path) -> str:
    """SHA-256 over the files among ``paths`` (sorted; folders and ``__pycache__`` left out):
    each one's path relative to ``root``, then its bytes."""
    root = root.resolve()
    digest = hashlib.sha256()
    for path in sorted(p.resolve() for p in paths):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def text_hash(value: object) -> str:
    """SHA-256 of ``value`` as JSON with sorted keys (what is not JSON, by its ``str``)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
