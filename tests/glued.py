"""The values a built page glued into its text with myst-nb's ``glue``, by name.

myst-nb writes every value a page glues beside the page's executed notebook,
in ``_build/jupyter_execute/<page>.glue.json``, as the plain-text form that
``{glue:text}`` pastes into the prose. A test compares those values with an
independent computation, so a number in a sentence is checked without the
test re-typing the sentence.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest
from built_book import ROOT

EXECUTED = ROOT / "_build" / "jupyter_execute"


def glued(page: str) -> dict[str, Any]:
    """The values ``page`` (e.g. ``"chapters/06_causal_masking"``) glued, by name.

    Each is the Python literal of its plain text (a float, an int, a bool, a
    str); a page should glue plain Python values (``float(x)``, not a numpy
    scalar), whose text is exactly that literal.
    """
    path = EXECUTED / f"{page}.glue.json"
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} does not exist: build the book first (./course build)")
    values = {}
    for name, output in json.loads(path.read_text(encoding="utf-8")).items():
        text = output["data"]["text/plain"]
        try:
            values[name] = ast.literal_eval(text)
        except (SyntaxError, ValueError):
            pytest.fail(f"{page} glued {name!r} as {text!r}, not a plain Python value")
    return values
