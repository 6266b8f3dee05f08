"""Homework 3: queries, keys and values from the projection matrices.

Learner functions: ``project_qkv(x, w_q, w_k, w_v)`` returns ``(q, k, v)`` =
``(x W_Q, x W_K, x W_V)`` for x of shape (..., n, d_model); and
``score_matrix(q, k)`` returns the raw scores ``e_ij = q_i . k_j``, shape
(..., n_q, n_k).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .authoring import (
    BATCHES,
    DTYPES,
    HINTS,
    describe_inputs,
    generator,
    judge_each,
    near,
    normal,
    sentence_qkv,
    unpack,
)
from .check import Assignment
from .compare import Mismatch, compare_arrays, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case

A = Assignment("hw3_queries_keys_values", chapter="chapters/03_queries_keys_values.md")


def _project_case(x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray) -> Case:
    return make_case("project_qkv", x, w_q, w_k, w_v, label=describe_inputs(x=x, w_q=w_q, w_k=w_k, w_v=w_v))


def _project_visible(seed: int) -> list[Case]:
    lib = reference()
    _, x = lib.example_sentence()
    w = lib.example_projections()
    gen = generator(seed, 1)
    x32 = normal(gen, (2, 3, 5), np.float32)
    ws32 = [normal(gen, (5, d), np.float32) for d in (4, 4, 2)]
    return [_project_case(x, w["w_q"], w["w_k"], w["w_v"]), _project_case(x32, *ws32)]


def _project_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 2)
    out = []
    for i in range(8):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[i % 2]
        n, d_model, d_k, d_v = (int(gen.integers(1, 8)) for _ in range(4))
        x = normal(gen, (*lead, n, d_model), dtype, 10.0 ** gen.uniform(-1, 1))
        ws = [normal(gen, (d_model, d), dtype) for d in (d_k, d_k, d_v)]
        out.append(_project_case(x, *ws))
    return out


def _judge_project(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        x, w_q, w_k, w_v = args
        expected = lib.project_qkv(x, w_q, w_k, w_v)
        items = unpack(got, ("q", "k", "v"), name)
        # Each entry sums d_model products; its rounding scales with |x_i| |w column|.
        scale = float(np.linalg.norm(x.astype(np.float64), axis=-1).max(initial=1.0)) * max(
            float(np.linalg.norm(w.astype(np.float64), axis=0).max(initial=1.0)) for w in (w_q, w_k, w_v)
        )
        for label, item, exp in zip("qkv", items, expected):
            try:
                compare_arrays(item, exp, what=f"{name}, {label}", scale=scale)
            except Mismatch as exc:
                for other, other_exp in zip("QKV", expected):
                    if other != label.upper() and isinstance(item, np.ndarray) and near(item, other_exp):
                        raise Mismatch(
                            f"{exc}. Hint: your {label} equals X W_{other}: {HINTS['projections_mixed_up']}"
                        ) from None
                raise

    return f"{judge_each(cases, results, one)} cases match lib.project_qkv"


def _score_case(q: np.ndarray, k: np.ndarray) -> Case:
    return make_case("score_matrix", q, k, label=describe_inputs(q=q, k=k))


def _score_visible(seed: int) -> list[Case]:
    q, k, _ = sentence_qkv()
    gen = generator(seed, 3)
    return [
        _score_case(q, k),
        _score_case(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])),
        _score_case(normal(gen, (2, 4, 3), np.float32), normal(gen, (2, 5, 3), np.float32)),
    ]


def _score_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 4)
    out = []
    for i in range(8):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[i % 2]
        n_q, n_k, d_k = (int(gen.integers(1, 8)) for _ in range(3))
        scale = 10.0 ** gen.uniform(-1, 1)
        out.append(_score_case(normal(gen, (*lead, n_q, d_k), dtype, scale), normal(gen, (*lead, n_k, d_k), dtype)))
    return out


def _judge_scores(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        q, k = args
        expected = lib.dot_product_scores(q, k)
        scale = float(
            np.linalg.norm(q.astype(np.float64), axis=-1).max(initial=1.0)
            * np.linalg.norm(k.astype(np.float64), axis=-1).max(initial=1.0)
        )
        try:
            compare_arrays(got, expected, what=name, scale=scale)
        except Mismatch as exc:
            d_k = q.shape[-1]
            if isinstance(got, np.ndarray) and d_k > 1 and near(got, expected / np.sqrt(d_k)):
                raise Mismatch(
                    f"{exc}. Hint: this asks for the raw scores q_i . k_j; {HINTS['scaled_too_early']}"
                ) from None
            if isinstance(got, np.ndarray) and near(got, np.swapaxes(expected, -1, -2)):
                raise Mismatch(f"{exc}. Hint: it is {HINTS['transposed']}") from None
            raise

    return f"{judge_each(cases, results, one)} cases match Q K^T (lib.dot_product_scores(q, k))"


A.add(
    "project_qkv",
    ["project_qkv"],
    points=2,
    cases=_project_visible,
    judge=_judge_project,
    description="the example sentence with the chapter's projections, and a float32 batch",
)
A.add(
    "project_qkv_hidden",
    ["project_qkv"],
    points=3,
    cases=_project_hidden,
    judge=_judge_project,
    description="random sizes, batch dimensions, float32 and float64, compared with lib.project_qkv",
)
A.add(
    "score_matrix",
    ["score_matrix"],
    points=2,
    cases=_score_visible,
    judge=_judge_scores,
    description="the example sentence's Q K^T, one query against three keys, and a float32 batch",
)
A.add(
    "score_matrix_hidden",
    ["score_matrix"],
    points=3,
    cases=_score_hidden,
    judge=_judge_scores,
    description="random n_q != n_k, batch dimensions, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_project_qkv = notebook_check(A, "project_qkv")
check_score_matrix = notebook_check(A, "score_matrix")
check_before_submit = before_submit_check(A)
