"""Where the tests find the book that `./course test` builds before pytest runs."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"


def built_page(relative: str) -> str:
    """The text of one built page, e.g. ``"chapters/04_scaled_dot_product_attention.html"``.

    Fails (not skips) with a clear message when the book has not been built.
    """
    page = HTML / relative
    if not page.is_file():
        pytest.fail(
            f"{page.relative_to(ROOT)} does not exist: build the book first. "
            "Run `./course test`, which builds the book and then runs pytest "
            "(or `./course build`)."
        )
    return page.read_text(encoding="utf-8")
