"""``python -m lite [--site _build/html]``: build the in-browser Jupyter into the site
(``./course build`` runs it after the book and the learner kit)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .build import build
from .places import ROOT, LiteBuildError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lite", description="Build the in-browser Jupyter into the site.")
    parser.add_argument(
        "--site", type=Path, default=ROOT / "_build" / "html", help="the built book (default: _build/html)"
    )
    args = parser.parse_args(argv)
    try:
        build(args.site.resolve())
    except LiteBuildError as err:
        print(f"lite: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
