"""Homework 7: multi-head attention (split, attend, concatenate, project).

Learner functions: ``split_heads(x, n_heads)`` turns (..., n, h*d) into
(..., h, n, d), head m holding columns m*d to (m+1)*d - 1; ``merge_heads(x)``
undoes it; ``multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads)`` returns
the (..., n, d_out) output of self-attention with ``n_heads`` heads, each
scaled by 1/sqrt(d_k) of the head. (The notebook's ``softmax_rows`` and
``attention`` helpers are the learner's own and are not graded here.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .authoring import BATCHES, DTYPES, HINTS, attention_rtol, describe_inputs, generator, judge_each, near, normal
from .check import Assignment
from .compare import Mismatch, compare_arrays, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case
from .rules import DTYPE, IN_PLACE, PRECISION

A = Assignment("hw7_multi_head_attention", chapter="chapters/07_multi_head_preview.md")


def _split_case(x: np.ndarray, h: int) -> Case:
    return make_case("split_heads", x, h, label=describe_inputs(x=x) + f", n_heads = {h}")


def _merge_case(x: np.ndarray) -> Case:
    return make_case("merge_heads", x, label=describe_inputs(x=x))


def _split_visible(seed: int) -> list[Case]:
    x = np.arange(12.0).reshape(3, 4)
    gen = generator(seed, 1)
    y = normal(gen, (2, 5, 6), np.float32)
    return [
        _split_case(x, 2),
        _split_case(y, 3),
        _merge_case(np.arange(12.0).reshape(2, 3, 2)),
        _merge_case(normal(gen, (2, 3, 5, 2), np.float32)),
    ]


def _split_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 2)
    out = []
    for i in range(8):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[i % 2]
        # the first split and the first merge have two heads, features and tokens or more, so every
        # seed meets cases whose order of axes matters (one head, feature or token reshapes the same
        # either way)
        least = 2 if i < 2 else 1
        h, d, n = int(gen.integers(least, 5)), int(gen.integers(least, 5)), int(gen.integers(least, 7))
        out.append(
            _split_case(normal(gen, (*lead, n, h * d), dtype), h)
            if i % 2 == 0
            else _merge_case(normal(gen, (*lead, h, n, d), dtype))
        )
    return out


def _judge_split(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        if name == "split_heads":
            x, h = args
            expected = lib.split_heads(x, h)
            try:
                compare_arrays(got, expected, what=name)
            except Mismatch as exc:
                naive = x.reshape(*x.shape[:-2], h, x.shape[-2], x.shape[-1] // h)
                if isinstance(got, np.ndarray) and got.shape == naive.shape and np.array_equal(got, naive):
                    raise Mismatch(
                        f"{exc}. Hint: reshaping straight to (..., h, n, d) {HINTS['reshape_without_swap']}; "
                        "reshape to (..., n, h, d), then swap the axes of n and h"
                    ) from None
                raise
        else:
            (x,) = args
            try:
                compare_arrays(got, lib.merge_heads(x), what=name)
            except Mismatch as exc:
                hint = _merge_hint(got, x)
                if hint:
                    raise Mismatch(f"{exc}. Hint: {hint}") from None
                raise

    return f"{judge_each(cases, results, one)} cases match lib.split_heads and lib.merge_heads"


def _wrong_merges(x: np.ndarray) -> list[tuple[np.ndarray, str]]:
    """The usual wrong ways of merging (..., h, n, d) heads into (..., n, h*d), each where it differs from
    the right merge (with heads one feature wide, merging feature by feature is right)."""
    *lead, h, n, d = x.shape
    right = np.swapaxes(x, -3, -2).reshape(*lead, n, h * d)
    candidates = [
        (
            x.reshape(*lead, n, h * d),
            f"reshaping (..., h, n, d) straight to (..., n, h*d) {HINTS['reshape_without_swap']}: swap the axes "
            "of h and n first (np.swapaxes(x, -3, -2)), then reshape",
        ),
        (
            np.swapaxes(np.swapaxes(x, -3, -2), -1, -2).reshape(*lead, n, h * d),
            f"{HINTS['merged_feature_by_feature']}: the columns go feature by feature, mixing the heads; "
            "head m must fill columns m*d to (m+1)*d - 1 (swap h and n only, then reshape)",
        ),
    ]
    return [(wrong, hint) for wrong, hint in candidates if not np.array_equal(wrong, right)]


def _merge_hint(got: Any, x: np.ndarray) -> str | None:
    if not isinstance(got, np.ndarray) or x.shape[-3] < 2:
        return None
    for wrong, hint in _wrong_merges(x):
        if got.shape == wrong.shape and np.array_equal(got.astype(np.float64), wrong.astype(np.float64)):
            return hint
    return None


def _mha_case(x: np.ndarray, weights: list[np.ndarray], h: int) -> Case:
    """A case of ``multi_head_attention(x, w_q, w_k, w_v, w_o, h)``; ``weights`` is ``[w_q, w_k, w_v, w_o]``."""
    w_q, w_k, w_v, w_o = weights
    return make_case(
        "multi_head_attention",
        x,
        w_q,
        w_k,
        w_v,
        w_o,
        h,
        label=describe_inputs(x=x, w_q=w_q, w_v=w_v, w_o=w_o) + f", n_heads = {h}",
    )


def _mha_visible(seed: int) -> list[Case]:
    lib = reference()
    _, x = lib.example_sentence(d_model=8)
    gen = generator(seed, 3)
    ws = [normal(gen, (8, 8), scale=8**-0.5) for _ in range(4)]
    x32 = normal(gen, (2, 3, 6), np.float32)
    ws32 = [normal(gen, s, np.float32, 0.4) for s in ((6, 6), (6, 6), (6, 9), (9, 4))]
    return [_mha_case(x, ws, 2), _mha_case(x, ws, 1), _mha_case(x32, ws32, 3)]


def _mha_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 4)
    out = []
    for i in range(8):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 2) % 2]
        h = (2, 4, 1)[i % 3]
        # the first case (two heads) has d_k, d_v and n of 2 or more, so every seed meets a case where
        # the scale and the order of the axes matter
        least = 2 if i == 0 else 1
        d_model, d_k, d_v, d_out, n = (int(gen.integers(lo, 6)) for lo in (1, least, least, 1, least))
        x = normal(gen, (*lead, n, d_model), dtype)
        s = 1.0 / np.sqrt(d_model)
        ws = [
            normal(gen, (d_model, h * d_k), dtype, s),
            normal(gen, (d_model, h * d_k), dtype, s),
            normal(gen, (d_model, h * d_v), dtype, s),
            normal(gen, (h * d_v, d_out), dtype, s),
        ]
        out.append(_mha_case(x, ws, h))
    return out


def _judge_mha(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, w_q, w_k, w_v, w_o, h = args
        expected = lib.multi_head_attention(x, w_q, w_k, w_v, w_o, h)
        q = lib.split_heads(x @ w_q, h)
        k = lib.split_heads(x @ w_k, h)
        rtol = attention_rtol(q, k)
        wide = (
            float(np.abs((x @ w_v).astype(np.float64)).max(initial=1.0))
            * float(np.linalg.norm(w_o.astype(np.float64), axis=0).max(initial=1.0))
            * np.sqrt(w_o.shape[0])
        )
        heads = lib.scaled_dot_product_attention(q, k, lib.split_heads(x @ w_v, h))
        if isinstance(got, np.ndarray) and got.shape != expected.shape:
            merged = lib.merge_heads(heads)
            if got.shape == merged.shape:
                raise Mismatch(
                    f"{name} returned shape {got.shape}; expected shape {expected.shape}. Hint: "
                    f"that is the shape of the concatenated heads (n, h*d_v): {HINTS['no_output_projection']}; "
                    "multiply the merged heads by w_o"
                )
        try:
            compare_arrays(got, expected, what=name, rtol=rtol, scale=max(1.0, wide))
        except Mismatch as exc:
            if isinstance(got, np.ndarray) and got.shape == expected.shape:
                if near(got, lib.merge_heads(heads)):
                    raise Mismatch(
                        f"{exc}. Hint: it equals the concatenated heads, so {HINTS['no_output_projection']}: "
                        "multiply by W_O (w_o) at the end"
                    ) from None
                if h > 1:
                    for wrong, hint in _wrong_merges(heads):
                        if near(got, wrong @ w_o):
                            raise Mismatch(f"{exc}. Hint: {hint}") from None
            if isinstance(got, np.ndarray) and got.shape == expected.shape:
                wrong_scales = [(1.0, f"it matches every head's softmax(q k^T) {HINTS['no_scale']}")]
                if h > 1:
                    wrong_scales.append(
                        (
                            1.0 / np.sqrt(w_q.shape[1]),
                            "each head must be scaled by 1/sqrt(d_k) of the head "
                            f"(its own width), {HINTS['full_width_scale']}",
                        )
                    )
                v_heads = lib.split_heads(x @ w_v, h)
                for scale, hint in wrong_scales:
                    scaled = lib.scaled_dot_product_attention(q, k, v_heads, scale=scale)
                    if np.allclose(got, lib.merge_heads(scaled) @ w_o, rtol=1e-4, atol=1e-4):
                        raise Mismatch(f"{exc}. Hint: {hint}") from None
            raise

    return f"{judge_each(cases, results, one, precision=True)} cases match lib.multi_head_attention"


A.add(
    "split_merge",
    ["split_heads", "merge_heads"],
    points=2,
    cases=_split_visible,
    judge=_judge_split,
    description="split_heads and merge_heads on small arrays, float64 and float32",
)
A.add(
    "split_merge_hidden",
    ["split_heads", "merge_heads"],
    points=2,
    cases=_split_hidden,
    judge=_judge_split,
    description="random widths and head counts, batch dimensions",
)
A.add(
    "multi_head",
    ["multi_head_attention"],
    points=2,
    cases=_mha_visible,
    judge=_judge_mha,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="the example sentence (d_model = 8) with 2 heads and 1 head, and a float32 batch with 3 heads",
)
A.add(
    "multi_head_hidden",
    ["multi_head_attention"],
    points=4,
    cases=_mha_hidden,
    judge=_judge_mha,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="random sizes, 1, 2 or 4 heads, batch dimensions, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_multi_head = notebook_check(A, "multi_head")
check_split_merge = notebook_check(A, "split_merge")
check_before_submit = before_submit_check(A)
