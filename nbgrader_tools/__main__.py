"""Regenerate the homework releases in ``exercises/`` from ``solutions/``::

    python -m nbgrader_tools release             # every assignment
    python -m nbgrader_tools release hw2_stable_softmax

Each command runs nbgrader in a temporary course folder made from the
repository's ``nbgrader_config.py`` and ``solutions/``, then copies the
generated student version into ``exercises/``; no gradebook is left behind. It refuses
(exit code 1, nothing written) when an assignment's mutant catalogue finds a mistake that
the checks let earn full marks (:mod:`nbgrader_tools.mutants`).
(``python -m nbgrader_tools batch COMMANDS`` is the worker of
:func:`nbgrader_tools.scratch_course.run_nbgrader_batch`, ``python -m
nbgrader_tools serve`` that of :func:`nbgrader_tools.scratch_course.serve`.)
"""

from __future__ import annotations

import json
import sys

from .points import PointsError
from .scratch_course import REPO, ReleaseRefused, batch, release, serve


def main(argv: list[str]) -> int:
    if argv[:1] == ["batch"] and len(argv) == 2:
        return batch(json.loads(argv[1]))
    if argv == ["serve"]:
        return serve()
    if not argv or argv[0] != "release":
        print(__doc__)
        return 2
    try:
        written = release(argv[1:] or None)
    except FileNotFoundError as exc:
        print(f"course release: {exc}", file=sys.stderr)
        return 2
    except PointsError as exc:
        print(f"course release: {exc}", file=sys.stderr)
        return 1
    except ReleaseRefused as exc:
        print(f"course release: refused, nothing written:\n{exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
