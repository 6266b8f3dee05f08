"""An attention output and its weights judged, and the usual mistakes named (no scale, the mask
after the softmax, weights transposed, an output that is not ``weights @ v``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compare import Mismatch, Partial, check_form, compare_arrays, reference
from .hints import HINTS
from .judging import unpack
from .tolerances import attention_rtol
from .weights import EDGE_SHARE, check_weight_rows, edge_rows, near, row_label, softmax_hint


def _mask_hint(w: np.ndarray, exp_w: np.ndarray, scores: np.ndarray, permitted: np.ndarray) -> str | None:
    """What a masked attention's wrong weights are, when they are masked the wrong way round; else None."""
    dtypes: set[np.dtype] = {exp_w.dtype, np.dtype(np.float64)}
    zeroed = reference().softmax(scores, axis=-1) * permitted
    for renormalised in (_renormalised_after_softmax(scores.astype(t), permitted) for t in dtypes):
        if near(renormalised, exp_w) or not near(np.nan_to_num(w), renormalised):
            continue
        nothing = np.any(permitted, axis=-1) & ~np.any(renormalised != 0, axis=-1)
        i = row_label(tuple(int(t) for t in np.argwhere(nothing)[0]) if nothing.any() else ())
        if near(w, zeroed):
            # Renormalised or not, these weights are the same (each other query's forbidden weights are
            # too small to show): name neither way of zeroing, only what both got wrong.
            return (
                f"query {i} gets no weight at all: a forbidden key scoring far above the permitted ones "
                "took the whole softmax over every key and exp underflowed to 0 on every permitted key; "
                "set the forbidden scores to -inf before the softmax, not the weights to 0 after it"
            )
        return (
            f"query {i} gets no weight at all: {HINTS['renormalised_after_softmax']} "
            "and the rest renormalised, so a forbidden key scoring far above the permitted ones took "
            "the whole softmax and exp underflowed to 0 on every permitted key; set the forbidden "
            "scores to -inf before the softmax"
        )
    if near(w, zeroed) and not near(zeroed, exp_w):  # where no query loses a key to the mask, they are the same
        return (
            "the weights are the unmasked softmax with the forbidden keys set "
            f"to 0 afterwards, so the rest no longer sum to 1: {HINTS['masked_after_softmax']}; "
            "set the forbidden scores to -inf before it"
        )
    return None


def check_attention(
    value: Any,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    what: str,
    mask: np.ndarray | None = None,
    forbidden: str = "the mask forbids",
    names: tuple[str, str] = ("output", "weights"),
) -> None:
    """Judge an ``(output, weights)`` pair against ``lib.scaled_dot_product_attention``.

    On a wrong value it tries the usual mistakes (no scale, dividing by d_k,
    scaling or masking after the softmax, the softmax over the wrong axis or
    without keepdims, weights transposed, output not ``weights @ v``) and
    names the one that fits. A fully masked query that is the only thing
    wrong costs half the case (:func:`edge_rows`).
    """
    lib = reference()
    out, w = unpack(value, names, what)
    exp_out, exp_w = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    if _transposed(w, exp_w):
        # Named before the shape and the rows are judged: transposed weights have the shape (n_k, n_q),
        # and their columns sum to 1, which would read as the softmax taken over the wrong axis.
        try:
            compare_arrays(w, exp_w, what=f"{what}, {names[1]}", rtol=attention_rtol(q, k))
        except Mismatch as exc:
            raise Mismatch(f"{exc}. Hint: they are {HINTS['transposed']}") from None
    check_form(w, exp_w, what=f"{what}, {names[1]}")
    check_form(out, exp_out, what=f"{what}, {names[0]}")
    permitted = np.ones(exp_w.shape, dtype=bool) if mask is None else np.broadcast_to(mask, exp_w.shape)
    w, edge = edge_rows(w, permitted, what=f"{what}, {names[1]}", row="query", forbidden_all="a fully masked query")
    if edge is not None:
        empty = ~np.any(permitted, axis=-1)
        out = np.where(empty[..., None], 0, out).astype(out.dtype)
    d_k = q.shape[-1]
    rtol = attention_rtol(q, k)
    scores = (q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)) / np.sqrt(d_k)
    logits = np.where(permitted, scores, -np.inf)
    try:
        check_weight_rows(
            w, permitted, what=f"{what}, {names[1]}", row="query", col="key", forbidden=forbidden, rtol=rtol, d_k=d_k
        )
        compare_arrays(w, exp_w, what=f"{what}, {names[1]}", rtol=rtol)
    except Mismatch as exc:
        guesses = [
            (f"they match softmax(Q K^T) {HINTS['no_scale']}", dict(scale=1.0)),
            (f"they match softmax(Q K^T / d_k): {HINTS['scale_by_dk']}", dict(scale=1.0 / d_k)),
        ]
        for hint, kw in guesses:
            if d_k > 1 and near(w, lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True, **kw)[1]):
                raise Mismatch(f"{exc}. Hint: {hint}") from None
        if "Hint:" in str(exc):
            raise
        named = (_mask_hint(w, exp_w, scores, permitted) if mask is not None else None) or softmax_hint(w, logits)
        if named:
            raise Mismatch(f"{exc}. Hint: {named}") from None
        raise
    try:
        compare_arrays(out, exp_out, what=f"{what}, {names[0]}", scale=value_scale(v), rtol=rtol)
    except Mismatch as exc:
        if not near(out, w.astype(np.float64) @ v.astype(np.float64), rtol=1e-4):
            raise Mismatch(f"{exc}. Hint: {HINTS['output_not_weights_v']}") from None
        raise
    if edge is not None:
        raise Partial(edge, 1 - EDGE_SHARE)


def _transposed(w: Any, expected: np.ndarray) -> bool:
    """Are the weights ``w`` the expected ones with their last two axes swapped (and not the expected ones)?"""
    if not isinstance(w, np.ndarray) or w.dtype.kind != "f" or w.ndim < 2 or expected.ndim < 2:
        return False
    swapped = np.swapaxes(w, -1, -2)
    return swapped.shape == expected.shape and not near(w, expected) and near(swapped, expected)


def _renormalised_after_softmax(scores: np.ndarray, permitted: np.ndarray) -> np.ndarray:
    """The weights of a usual mistake: the softmax over every key (shifted by the maximum of all
    of them), the forbidden weights zeroed and the rest divided by their sum (0 where it is 0),
    computed in the dtype of ``scores`` (exp underflows to 0 below about -745 in float64, -104
    in float32)."""
    with np.errstate(all="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True, initial=-np.inf)) * permitted
        total = e.sum(axis=-1, keepdims=True)
        weights: np.ndarray = np.where(total > 0, e / np.where(total > 0, total, 1), 0.0)
    return weights


def value_scale(v: np.ndarray) -> float:
    """The size of the values ``v`` that an attention output averages: ``max(1, max |v|)``
    (the ``scale`` of :func:`~grading.compare.compare_arrays` for an output)."""
    return max(1.0, float(np.abs(v.astype(np.float64)).max(initial=0.0)))
