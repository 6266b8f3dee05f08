"""Figures the chapters share: heatmaps of score and weight matrices.

Colour maps are readable by colour-blind readers: ``cividis`` for values of
one sign (weights) and ColorBrewer's diverging ``PuOr`` for signed scores.

matplotlib is imported where a figure is drawn, not when this module is: a
chapter's first cell imports :func:`heatmap`, and in the in-browser Jupyter
importing ``matplotlib.pyplot`` takes seconds that the chapter's first printed
numbers should not wait for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["heatmap", "SEQUENTIAL", "DIVERGING"]

SEQUENTIAL = "cividis"
DIVERGING = "PuOr"


def heatmap(
    matrix: np.ndarray,
    rows: Sequence[str],
    cols: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "",
    fmt: str = "{:.2f}",
    annotate: bool = True,
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
    signed: bool | None = None,
) -> Axes:
    """Draw ``matrix`` with rows = queries and columns = keys.

    Entries that are ``-inf`` (forbidden by a mask) are drawn light grey with a
    hatch and labelled "masked", so they never look like a small number.
    ``signed`` chooses the diverging map, centred on 0 (default: when an entry
    is negative); a difference map sets it, as its sign can go either way.
    """
    import matplotlib.pyplot as plt

    m = np.asarray(matrix, dtype=float)
    cols = rows if cols is None else cols
    if m.shape != (len(rows), len(cols)):
        raise ValueError(f"matrix has shape {m.shape} but there are {len(rows)} row and {len(cols)} column labels")
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.75 * len(cols), 0.8 + 0.6 * len(rows)))
    finite = np.isfinite(m)
    shown = np.ma.masked_where(~finite, m)
    if signed is None:
        signed = bool(finite.any() and (m[finite] < 0).any())
    if signed:
        lim = float(np.abs(m[finite]).max(initial=0.0)) or 1.0
        vmin, vmax = (-lim if vmin is None else vmin), (lim if vmax is None else vmax)
    cmap = plt.get_cmap(DIVERGING if signed else SEQUENTIAL).with_extremes(bad="#dddddd")
    image = ax.imshow(shown, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)), labels=list(cols))
    ax.set_yticks(range(len(rows)), labels=list(rows))
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    if title:
        ax.set_title(title, pad=28)
    for i, j in zip(*np.nonzero(~finite)):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor="#888888", lw=0))
    if annotate:
        norm = image.norm
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                if not finite[i, j]:
                    ax.text(j, i, "masked", ha="center", va="center", fontsize=7, color="#333333")
                    continue
                rgba = cmap(norm(m[i, j]))
                light = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] > 0.5
                ax.text(
                    j, i, fmt.format(m[i, j]), ha="center", va="center", fontsize=8, color="black" if light else "white"
                )
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return ax
