"""Numbers for a page's sentences: myst-nb's ``glue``, where the book is built.

A chapter that quotes a number it computes glues it in a code cell,
``glue("masked_entries", int(count))``, and pastes it into its prose with
``{glue:text}`masked_entries:d```; myst-nb does both when it builds the book,
so the sentence shows the value the code computed, formatted as asked.
Outside the build (the chapter run in the browser or in JupyterLab) there is
no prose to paste into, and myst-nb need not be installed: ``glue`` then
does nothing, and the rest of the chapter's code runs as it is.

Glue plain Python values (``float(x)``, not a numpy scalar, whose text is not
a number the format can read), and never in a cell that draws a figure.
"""

from __future__ import annotations

from typing import Any

__all__ = ["glue"]


def glue(name: str, value: Any) -> None:
    """Keep ``value`` for the page's text under ``name``, showing nothing in the cell.

    >>> glue("answer", 42)  # outside a book build: nothing to show, nothing raised
    """
    try:
        from myst_nb import glue as myst_nb_glue
    except ImportError:  # not building the book (the browser's Python has no myst-nb)
        return
    myst_nb_glue(name, value, display=False)
