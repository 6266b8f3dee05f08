"""Numbers for a page's sentences: myst-nb's ``glue``, where the book is built.

A chapter that quotes a number it computes glues it in a code cell,
``glue("masked_entries", count)``, and pastes it into its prose or captions
with ``{glue:text}`masked_entries:d```, and into a figure's alt text the same
way (``_ext/glued_alt.py``); myst-nb does the rest when it builds the book, so
the sentence shows the value the code computed, formatted as asked. The
number is typed nowhere.

Outside the build (the chapter run in the browser or in JupyterLab) there is
no prose to paste into, and myst-nb need not be installed: ``glue`` then
does nothing, and the rest of the chapter's code runs as it is.

Never glue in a cell that draws a figure.
"""

from __future__ import annotations

from typing import Any

__all__ = ["glue"]


def glue(name: str, value: Any) -> None:
    """Keep ``value`` for the page's text under ``name``, showing nothing in the cell.

    A numpy number is kept as the Python number it holds: the page's format
    (``:.3f``) reads the value's text, and numpy writes ``np.float64(0.5)``
    where Python writes ``0.5``.

    >>> glue("answer", 42)  # outside a book build: nothing to show, nothing raised
    """
    try:
        from myst_nb import glue as myst_nb_glue
    except ImportError:  # not building the book (the browser's Python has no myst-nb)
        return
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        value = item()
    myst_nb_glue(name, value, display=False)
