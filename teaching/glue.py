"""Numbers a chapter's prose quotes, handed to the book's build.

A chapter computes a number in a code cell and calls ``glue("name", value)``;
its text then writes ``{glue:text}`name:.3f``` where the number belongs, and
the build (myst-nb's glue) puts the computed value there, in the prose, the
captions and (with ``_ext/glued_alt.py``) the figures' alt text. The number is
typed nowhere.

Outside the book's build (the in-browser Jupyter, a learner's own Jupyter)
there is no page to paste into and myst-nb may not be installed: ``glue``
then does nothing, and the cell runs as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import myst_nb
except ImportError:  # no book is being built here
    myst_nb = None

__all__ = ["glue"]


def glue(name: str, value: Any) -> None:
    """Hand ``value`` to the build under ``name``; the cell shows nothing of it.

    A numpy number is handed over as the Python number it holds: the page's
    format (``:.3f``) reads the value's text, and numpy writes
    ``np.float64(0.5)`` where Python writes ``0.5``.
    """
    if myst_nb is not None:
        myst_nb.glue(name, value.item() if isinstance(value, np.generic) else value, display=False)
