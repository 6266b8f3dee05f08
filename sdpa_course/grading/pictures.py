"""Mistakes drawn: the learner's weights beside the expected ones, and their difference.

When a check fails on rows of weights (a softmax, the weights of attention),
the message names the mistake; the picture shows it. Three heatmaps, drawn
by the chapters' own :func:`teaching.figures.heatmap` (its colour-blind-safe
maps): the learner's weight matrix, the expected one (from ``lib``) on the
same colour scale, and their difference. The alt text says in words what
differs ("columns sum to 1, rows do not", "positions after the query have
weight").

Only inputs the learner may see are drawn: a visible check's cases, or the
fresh inputs the "check before you submit" makes for a hidden kind. A hidden
check's cases at grading are the learner's hidden inputs, and
:func:`picture_for` refuses them (:class:`HiddenInput`).

matplotlib is imported only when a picture is drawn, so that importing
``grading`` stays light (the sandbox never draws); drawing writes nothing to
stderr (no warning, no font cache message), which nbgrader would hold
against a test cell.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .compare import Mismatch, largest_difference, reference, value_of
from .plain import Case, case_inputs

if TYPE_CHECKING:
    from .check import Check

#: (the learner's weights, the expected ones, where a weight is permitted, d_k or None).
_Found = tuple[Any, np.ndarray, np.ndarray, int | None]

__all__ = ["HiddenInput", "Picture", "describe", "picture_for", "show"]

#: Weights closer than this to the expected ones look the same in a heatmap: nothing to draw.
VISIBLE = 1e-3
#: Largest matrix drawn with its numbers written in the cells.
ANNOTATE_UP_TO = 8


class HiddenInput(ValueError):
    """A picture was asked of a hidden check's inputs, which the learner must never see."""


@dataclass(frozen=True)
class Weights:
    """One matrix of weights to draw: the learner's, the expected, where weight is permitted."""

    got: np.ndarray  # (n_rows, n_cols)
    expected: np.ndarray
    permitted: np.ndarray  # bool, same shape
    causal: bool  # the permitted entries are those with j <= i
    d_k: int | None  # the key size, when the weights come from attention
    where: str  # which case, in the learner's words


@dataclass(frozen=True)
class Picture:
    """A drawn mistake: a PNG and the words that say what it shows."""

    png: bytes
    alt: str

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")

    def html(self) -> str:
        """A self-contained ``<img>`` (the PNG inline) with its alt text."""
        return f'<img src="{self.data_uri()}" alt="{html.escape(self.alt, quote=True)}">'


def _attention_weights(call: str, args: Sequence[Any], got: Any) -> _Found | None:
    """(got, expected, permitted, d_k) for the attention functions, or None."""
    lib = reference()
    if call == "attend_one_query":
        q, k, v = args[0][None, :], args[1], args[2]
        mask = None
    else:
        q, k, v = args[:3]
        mask = args[3] if call == "masked_attention" else None
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    weights = got[1]
    if call == "attend_one_query" and isinstance(weights, np.ndarray):
        weights = weights[None, :]
    _, expected = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    permitted = np.ones(expected.shape, bool) if mask is None else np.broadcast_to(mask, expected.shape)
    return weights, expected, permitted, int(q.shape[-1])


def _weights_of(case: Case, record: object) -> _Found | None:
    """(got, expected, permitted, d_k) of one case whose result holds weights, or None."""
    call = case["call"]
    args, _ = case_inputs(case)
    try:
        got = value_of(record, call)
    except Mismatch:
        return None
    found: _Found | None
    if call in ("softmax_rows", "online_softmax"):
        z = np.atleast_2d(args[0])
        got = np.atleast_2d(got) if isinstance(got, np.ndarray) else got
        found = (got, reference().softmax(z, axis=-1), ~np.isneginf(z), None)
    elif call in ("attention", "masked_attention", "attend_one_query"):
        found = _attention_weights(call, args, got)
    else:
        return None
    if found is None:
        return None
    got, expected = found[0], found[1]
    if not isinstance(got, np.ndarray) or got.shape != expected.shape or got.dtype.kind not in "fiu":
        return None
    if not np.isfinite(got).all() or got.size == 0:
        return None  # NaN and infinities have their own message; a heatmap would call them "masked"
    return (got.astype(np.float64), expected.astype(np.float64), np.asarray(found[2], bool), found[3])


def _first_difference(cases: Sequence[Case], results: Sequence[object]) -> Weights | None:
    """The first case whose weights differ visibly from the expected ones; of a batch, the matrix
    that holds the largest difference (the one the check's message names)."""
    for number, (case, record) in enumerate(zip(cases, results), 1):
        found = _weights_of(case, record)
        if found is None:
            continue
        got, expected, permitted, d_k = found
        off = np.abs(got - expected) > VISIBLE
        if not off.any():
            continue
        batch = largest_difference(np.abs(got - expected), off)[:-2]
        where = f"case {number} of {len(cases)} ({case['label']})"
        if batch:
            where += f", the matrix at batch index {batch if len(batch) > 1 else batch[0]}"
        p = permitted[batch]
        causal = bool((~p).any()) and np.array_equal(p, np.tri(*p.shape, dtype=bool))
        return Weights(got[batch], expected[batch], p, causal, d_k, where)
    return None


def _span(values: np.ndarray) -> str:
    low, high = float(values.min()), float(values.max())
    return f"{low:.3g}" if abs(high - low) < 5e-4 else f"{low:.3g} to {high:.3g}"


def describe(w: Weights) -> str:
    """What differs, in words: row and column sums, weight where none is permitted."""
    got, permitted = w.got, w.permitted
    live = permitted.any(axis=-1)
    rows = got.sum(axis=-1)[live]
    parts: list[str] = []
    # Attention weights are queries by keys; a softmax's are rows of entries, some of them -inf.
    row, col, forbidden = ("query", "key", "keys the mask forbids") if w.d_k else ("row", "entry", "-inf entries")
    leak = ~permitted & (np.abs(got) > VISIBLE)
    if leak.any():
        i, j = (int(t) for t in np.argwhere(leak)[0])
        where = "positions after the query" if w.causal else forbidden
        parts.append(f"{where} have weight ({row} {i} gives {got[i, j]:.2f} to {col} {j})")
    if rows.size == 0 or np.allclose(rows, 1.0, atol=VISIBLE):
        parts.append("rows sum to 1")
    elif got.shape[0] > 1 and np.allclose(got.sum(axis=0), 1.0, atol=VISIBLE):
        parts.append(f"columns sum to 1, rows do not (they sum to {_span(rows)})")
    elif np.ptp(rows) < VISIBLE:
        scaled = ""
        if w.d_k and w.d_k > 1 and abs(rows[0] - w.d_k**-0.5) < VISIBLE:
            scaled = f" (1/sqrt(d_k), with d_k = {w.d_k})"
        parts.append(f"every row sums to {rows[0]:.4g}{scaled}, not 1")
    elif not leak.any() and (~permitted).any() and (rows < 1 - VISIBLE).any() and (rows <= 1 + VISIBLE).all():
        what = "masked keys" if w.d_k else forbidden
        parts.append(f"{what} have weight 0 but rows sum to less than 1 ({_span(rows)})")
    else:
        parts.append(f"rows sum to {_span(rows)}, not 1")
    diff = np.abs(got - w.expected)
    i, j = largest_difference(diff)
    parts.append(f"the largest difference is {diff[i, j]:.2f}, at {row} {i}, {col} {j}")
    return (
        f"Heatmaps of your weights, the expected weights and your weights minus the expected, for {w.where}: "
        + "; ".join(parts)
        + ". Each expected row sums to 1"
        + (", with no weight after the query." if w.causal else ".")
    )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No warning and no log message (matplotlib's font cache) reaches stderr."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def _draw(w: Weights) -> bytes:
    with _quiet():
        from matplotlib.figure import Figure

        from sdpa_course.teaching.figures import heatmap

        n_rows, n_cols = w.got.shape
        labels_r, labels_c = [str(i) for i in range(n_rows)], [str(j) for j in range(n_cols)]
        top = max(1.0, float(w.got.max()), float(w.expected.max()))
        fig = Figure(figsize=(3 * (1.9 + 0.5 * n_cols), 1.6 + 0.45 * n_rows), dpi=72, layout="constrained")
        axes = fig.subplots(1, 3)
        annotate = max(n_rows, n_cols) <= ANNOTATE_UP_TO
        for ax, matrix, title in ((axes[0], w.got, "your weights"), (axes[1], w.expected, "expected weights")):
            heatmap(matrix, labels_r, labels_c, ax=ax, title=title, vmin=0.0, vmax=top, annotate=annotate)
        heatmap(
            w.got - w.expected, labels_r, labels_c, ax=axes[2], title="yours minus expected",
            annotate=annotate, signed=True,
        )  # fmt: skip
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    return buf.getvalue()


def picture_for(
    check: Check, cases: Sequence[Case], results: Sequence[object], *, fresh: bool = False
) -> Picture | None:
    """The picture of a failed check's first visibly wrong matrix of weights, or None.

    ``check`` is the :class:`~grading.check.Check` whose ``cases`` gave
    ``results``. A hidden check's cases are drawn only when the caller made
    them afresh for the learner (``fresh=True``: the "check before you
    submit"); otherwise :class:`HiddenInput` is raised, since they are the
    hidden inputs of grading.
    """
    if check.hidden and not fresh:
        raise HiddenInput(f"{check.id} is a hidden check: its inputs are never drawn")
    found = _first_difference(cases, results)
    if found is None:
        return None
    return Picture(_draw(found), describe(found))


def show(picture: Picture, heading: str) -> None:
    """Print ``heading`` and the alt text, and show the picture under the cell in a live notebook."""
    print(f"{heading}: {picture.alt}")
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    encoded = base64.b64encode(picture.png).decode("ascii")
    bundle = {"text/html": picture.html(), "image/png": encoded, "text/plain": picture.alt}
    display(bundle, raw=True, metadata={"image/png": {"alt": picture.alt}})
