"""The computation of scaled dot-product attention, drawn as boxes and arrows.

MatMul -> Scale -> Mask (optional) -> Softmax -> MatMul, with the shape of
every matrix on the arrow that carries it. Colours come from the Okabe-Ito
palette, which colour-blind readers can tell apart; the figure has an opaque
white background, so it reads the same on the book's dark theme.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

__all__ = ["attention_diagram"]

# Okabe-Ito colours (Okabe and Ito, "Color Universal Design"), light tints for box faces.
_INPUT = "#BFE1F4"  # sky blue, tinted: the inputs Q, K, V and the output O
_MATMUL = "#F5DDA6"  # orange, tinted: matrix products
_SCALE = "#B3E0D3"  # bluish green, tinted: the scale
_MASK = "#FFFFFF"  # white with a dashed edge: the optional mask
_SOFTMAX = "#EBC7DC"  # reddish purple, tinted: the softmax
_EDGE = "#222222"


def _box(ax, x: float, y: float, text: str, face: str, *, width: float = 1.5, dashed: bool = False) -> None:
    """A rounded box of the given face colour centred on (x, y), with text inside."""
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - 0.32),
            width,
            0.64,
            boxstyle="round,pad=0.04,rounding_size=0.12",
            facecolor=face,
            edgecolor=_EDGE,
            lw=1.6,
            linestyle="--" if dashed else "-",
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=12, color="black")


def _arrow(
    ax,
    start: tuple[float, float],
    end: tuple[float, float],
    label: str = "",
    *,
    above: bool = True,
    dashed: bool = False,
) -> None:
    """An arrow from start to end, with an optional label above (or below) its middle."""
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=16,
            lw=1.6,
            color=_EDGE,
            linestyle="--" if dashed else "-",
            shrinkA=0,
            shrinkB=0,
        )
    )
    if label:
        x, y = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
        ax.text(
            x,
            y + (0.12 if above else -0.12),
            label,
            ha="center",
            va="bottom" if above else "top",
            fontsize=10.5,
            color="black",
        )


def attention_diagram() -> Figure:
    """Draw the five steps of attention with the shape on every arrow; returns the figure.

    Q (n_q, d_k) and K (n_k, d_k) enter the first MatMul, which gives the
    scores Q K^T (n_q, n_k); Scale divides them by sqrt(d_k), giving S; the
    optional Mask sets forbidden entries to -inf (a dashed box: it may be
    skipped); Softmax turns each row into weights A (n_q, n_k); the second
    MatMul multiplies A by V (n_k, d_v) into the output O (n_q, d_v).

    Examples
    --------
    >>> fig = attention_diagram()
    >>> fig.get_facecolor()
    (1.0, 1.0, 1.0, 1.0)
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    fig, ax = plt.subplots(figsize=(13, 4.0), facecolor="white")
    ax.set_facecolor("white")
    ax.set_xlim(-0.5, 15.0)
    ax.set_ylim(-1.0, 3.0)
    ax.axis("off")

    row = 1.0  # the main line of steps
    xs = {"matmul1": 2.6, "scale": 5.4, "mask": 8.2, "softmax": 11.0, "matmul2": 13.9}
    half = 0.75  # half the width of a step's box

    # The inputs Q and K come in from the left, V from above the second MatMul.
    _box(ax, 0.45, 2.3, "Q\n(n_q, d_k)", _INPUT, width=1.4)
    _box(ax, 0.45, -0.3, "K\n(n_k, d_k)", _INPUT, width=1.4)
    _arrow(ax, (1.2, 2.1), (xs["matmul1"] - half, row + 0.2))
    _arrow(ax, (1.2, -0.1), (xs["matmul1"] - half, row - 0.2))

    _box(ax, xs["matmul1"], row, "MatMul\nQ Kᵀ", _MATMUL)
    _box(ax, xs["scale"], row, "Scale\n÷ √d_k", _SCALE)
    _box(ax, xs["mask"], row, "Mask\n(optional)", _MASK, dashed=True)
    _box(ax, xs["softmax"], row, "Softmax\nalong each row", _SOFTMAX, width=1.8)
    _box(ax, xs["matmul2"], row, "MatMul\nA V", _MATMUL)

    def link(a: float, b: float, name: str, shape: str) -> None:
        _arrow(ax, (a, row), (b, row), name)
        ax.text((a + b) / 2, row - 0.1, shape, ha="center", va="top", fontsize=10.5, color="black")

    link(xs["matmul1"] + half, xs["scale"] - half, "Q Kᵀ", "(n_q, n_k)")
    link(xs["scale"] + half, xs["mask"] - half, "S", "(n_q, n_k)")
    link(xs["mask"] + half, xs["softmax"] - 0.95, "S", "(n_q, n_k)")
    link(xs["softmax"] + 0.95, xs["matmul2"] - half, "A", "(n_q, n_k)")

    # The mask may be skipped: a dashed bypass below the Mask box.
    low = row - 0.75
    ax.plot([xs["scale"], xs["scale"], xs["softmax"]], [row - 0.36, low, low], color=_EDGE, lw=1.4, linestyle="--")
    _arrow(ax, (xs["softmax"], low), (xs["softmax"], row - 0.36), dashed=True)
    ax.text(
        xs["mask"],
        low - 0.08,
        "no mask: S goes straight to the softmax",
        ha="center",
        va="top",
        fontsize=10,
        color="black",
    )

    _box(ax, xs["matmul2"], 2.4, "V\n(n_k, d_v)", _INPUT, width=1.4)
    _arrow(ax, (xs["matmul2"], 2.4 - 0.36), (xs["matmul2"], row + 0.36))

    _box(ax, xs["matmul2"], -0.45, "O\n(n_q, d_v)", _INPUT, width=1.4)
    _arrow(ax, (xs["matmul2"], row - 0.36), (xs["matmul2"], -0.45 + 0.36))

    fig.tight_layout()
    return fig
