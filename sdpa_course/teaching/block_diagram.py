"""A Transformer block drawn as boxes and arrows, pre-LN beside post-LN.

Every arrow carries the shape of the matrix that flows along it; the residual
connections are the lines that go around a sub-layer and meet its output at an
addition. Colours come from the Okabe-Ito palette (tinted), which colour-blind
readers can tell apart, and every box is also named in words; the figure has
an opaque white background, so it reads the same on the book's dark theme.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

__all__ = ["block_diagram", "PRE_LN_STEPS", "POST_LN_STEPS"]

# Okabe-Ito colours, light tints for box faces.
_FACES = {
    "io": "#BFE1F4",  # sky blue: the block's input and output
    "norm": "#B3E0D3",  # bluish green: LayerNorm
    "attn": "#EBC7DC",  # reddish purple: multi-head attention
    "linear": "#F5DDA6",  # orange: the feed-forward layer's two linear maps
    "relu": "#F9F3B0",  # yellow: the ReLU
    "add": "#FFFFFF",  # white circle: the residual addition
}
_EDGE = "#222222"

# (kind, text in the box, shape on the arrow that leaves it); an "add" step joins a residual.
Step = tuple[str, str, str]
PRE_LN_STEPS: list[Step] = [
    ("io", "x", "(n, d_model)"),
    ("norm", "LayerNorm 1", "(n, d_model)"),
    ("attn", "Multi-head attention\nheads (h, n, d_k), weights (h, n, n)", "(n, d_model)"),
    ("add", "+", "(n, d_model)"),
    ("norm", "LayerNorm 2", "(n, d_model)"),
    ("linear", "· W₁ + b₁", "(n, d_ff)"),
    ("relu", "ReLU: max(0, ·)", "(n, d_ff)"),
    ("linear", "· W₂ + b₂", "(n, d_model)"),
    ("add", "+", "(n, d_model)"),
    ("io", "output", ""),
]
POST_LN_STEPS: list[Step] = [
    ("io", "x", "(n, d_model)"),
    ("attn", "Multi-head attention\nheads (h, n, d_k), weights (h, n, n)", "(n, d_model)"),
    ("add", "+", "(n, d_model)"),
    ("norm", "LayerNorm 1", "(n, d_model)"),
    ("linear", "· W₁ + b₁", "(n, d_ff)"),
    ("relu", "ReLU: max(0, ·)", "(n, d_ff)"),
    ("linear", "· W₂ + b₂", "(n, d_model)"),
    ("add", "+", "(n, d_model)"),
    ("norm", "LayerNorm 2", "(n, d_model)"),
    ("io", "output", ""),
]
# Residual connections: (step whose output branches off, the "add" step it joins).
PRE_LN_RESIDUALS = [(0, 3), (3, 8)]
POST_LN_RESIDUALS = [(0, 2), (3, 7)]

_GAP = 1.15  # vertical distance between steps
_HALF_H = 0.3  # half the height of a box
_RADIUS = 0.22  # radius of an addition's circle


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.add_patch(
        FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, lw=1.5, color=_EDGE, shrinkA=0, shrinkB=0)
    )


def _column(ax: Axes, cx: float, steps: list[Step], residuals: list[tuple[int, int]], title: str) -> None:
    """Draw one block as a column of steps centred on x = cx, read from top to bottom."""
    top = len(steps) * _GAP
    ys = [top - k * _GAP for k in range(len(steps))]
    ax.text(cx, top + 0.75, title, ha="center", va="bottom", fontsize=12.5, fontweight="bold", color="black")
    half_w = [_RADIUS if kind == "add" else 1.55 for kind, _, _ in steps]
    half_h = [_RADIUS if kind == "add" else _HALF_H for kind, _, _ in steps]
    for (kind, text, _), y, hw in zip(steps, ys, half_w):
        if kind == "add":
            ax.add_patch(Circle((cx, y), _RADIUS, facecolor=_FACES[kind], edgecolor=_EDGE, lw=1.5))
            ax.text(cx, y, "+", ha="center", va="center", fontsize=15, color="black")
            continue
        height = 2 * _HALF_H + (0.22 if "\n" in text else 0)
        ax.add_patch(
            FancyBboxPatch(
                (cx - hw, y - height / 2),
                2 * hw,
                height,
                boxstyle="round,pad=0.03,rounding_size=0.1",
                facecolor=_FACES[kind],
                edgecolor=_EDGE,
                lw=1.5,
            )
        )
        ax.text(cx, y, text, ha="center", va="center", fontsize=10 if "\n" in text else 11, color="black")
        if "\n" in text:
            half_h[ys.index(y)] = height / 2
    for k in range(len(steps) - 1):
        start, end = ys[k] - half_h[k], ys[k + 1] + half_h[k + 1]
        _arrow(ax, (cx, start), (cx, end))
        ax.text(cx - 0.1, (start + end) / 2, steps[k][2], ha="right", va="center", fontsize=9.5, color="black")
    side = cx + 2.0
    for branch, join in residuals:
        y0 = (ys[branch] - half_h[branch] + ys[branch + 1] + half_h[branch + 1]) / 2
        y1 = ys[join]
        ax.plot([cx, side, side], [y0, y0, y1], color=_EDGE, lw=1.5)
        ax.plot([cx], [y0], marker="o", markersize=4, color=_EDGE)
        _arrow(ax, (side, y1), (cx + _RADIUS, y1))
        ax.text(side + 0.08, (y0 + y1) / 2, "residual\n(n, d_model)", ha="left", va="center", fontsize=9, color="black")


def block_diagram() -> Figure:
    """Draw a pre-LN block (left) and a post-LN block (right), shapes on every arrow.

    Pre-LN: x -> LayerNorm 1 -> multi-head attention -> add x -> LayerNorm 2 ->
    W_1 (to width d_ff) -> ReLU -> W_2 (back to d_model) -> add. Post-LN: x ->
    multi-head attention -> add x -> LayerNorm 1 -> W_1 -> ReLU -> W_2 -> add
    -> LayerNorm 2.

    Examples
    --------
    >>> fig = block_diagram()
    >>> fig.get_facecolor()
    (1.0, 1.0, 1.0, 1.0)
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    fig, ax = plt.subplots(figsize=(12.5, 11.0), facecolor="white")
    ax.set_facecolor("white")
    ax.set_xlim(-1.4, 11.9)
    ax.set_ylim(0.3, len(PRE_LN_STEPS) * _GAP + 1.4)
    ax.axis("off")
    _column(ax, 1.2, PRE_LN_STEPS, PRE_LN_RESIDUALS, "Pre-LN block (the order GPT-2 uses)")
    _column(ax, 8.6, POST_LN_STEPS, POST_LN_RESIDUALS, "Post-LN block (original Transformer)")
    fig.tight_layout()
    return fig
