"""Homework 4: scaled dot-product attention, one query and then all at once.

Learner functions: ``attend_one_query(q_i, k, v)`` returns ``(o_i, a_i)``,
shapes (d_v,) and (n_k,); ``attention(q, k, v)`` returns ``(output,
weights)``, shapes (..., n_q, d_v) and (..., n_q, n_k). Both scale the scores
by 1/sqrt(d_k). (The notebook's ``softmax_rows`` helper is the learner's own
and is not graded here.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .authoring import (
    BATCHES,
    DTYPES,
    HINTS,
    attention_rtol,
    check_attention,
    check_weight_rows,
    describe_inputs,
    generator,
    inexact_root,
    judge_each,
    near,
    normal,
    sentence_qkv,
    unpack,
    value_scale,
)
from .check import Assignment
from .compare import Mismatch, check_form, compare_arrays, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case
from .rules import DTYPE, IN_PLACE, PRECISION

A = Assignment("hw4_scaled_dot_product_attention", chapter="chapters/04_scaled_dot_product_attention.md")


def _one_case(q_i: np.ndarray, k: np.ndarray, v: np.ndarray) -> Case:
    return make_case("attend_one_query", q_i, k, v, label=describe_inputs(q_i=q_i, k=k, v=v))


def _one_visible(seed: int) -> list[Case]:
    lib = reference()
    toy = lib.seed_toy_example()
    q, k, v = sentence_qkv()
    return [
        _one_case(toy["q"][0], toy["k"], toy["v"]),
        _one_case(q[2], k, v),
        _one_case(q[2].astype(np.float32), k.astype(np.float32), v.astype(np.float32)),
    ]


def _one_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 1)
    out = []
    for i in range(8):
        dtype = DTYPES[i % 2]
        n_k, d_k, d_v = (int(gen.integers(1, 9)) for _ in range(3))
        scale = 10.0 ** gen.uniform(-1, 1.3)
        if i == 0:  # float64: every seed has a case where a scale computed in float32 shows, with
            # inputs of unit scale: scores neither too small for it to matter nor so spread that
            # the weights are all 0 or 1
            d_k, scale = inexact_root(d_k), 1.0
        out.append(
            _one_case(
                normal(gen, (d_k,), dtype, scale), normal(gen, (n_k, d_k), dtype, scale), normal(gen, (n_k, d_v), dtype)
            )
        )
    return out


def _judge_one(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        q_i, k, v = args
        o_i, a_i = unpack(got, ("o_i", "a_i"), name)
        exp_out, exp_w = lib.scaled_dot_product_attention(q_i[None, :], k, v, return_weights=True)
        check_form(a_i, exp_w[0], what=f"{name}, a_i")
        check_form(o_i, exp_out[0], what=f"{name}, o_i")
        rtol = attention_rtol(q_i[None, :], k)
        check_weight_rows(
            a_i[None, :],
            np.ones((1, k.shape[0]), dtype=bool),
            what=f"{name}, a_i",
            row="query",
            col="key",
            rtol=rtol,
            d_k=q_i.shape[0],
        )
        try:
            compare_arrays(a_i, exp_w[0], what=f"{name}, a_i", rtol=rtol)
        except Mismatch as exc:
            d_k = q_i.shape[0]
            unscaled = lib.softmax(k.astype(np.float64) @ q_i.astype(np.float64))
            if d_k > 1 and near(a_i, unscaled):
                raise Mismatch(f"{exc}. Hint: they match softmax(q_i . k_j) {HINTS['no_scale']}") from None
            raise
        compare_arrays(o_i, exp_out[0], what=f"{name}, o_i", rtol=rtol, scale=value_scale(v))

    return f"{judge_each(cases, results, one, precision=True)} cases match lib.attend_one_query"


def _att_case(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> Case:
    return make_case("attention", q, k, v, label=describe_inputs(q=q, k=k, v=v))


def _att_visible(seed: int) -> list[Case]:
    lib = reference()
    toy = lib.seed_toy_example()
    q, k, v = sentence_qkv()
    gen = generator(seed, 2)
    return [
        _att_case(toy["q"], toy["k"], toy["v"]),
        _att_case(q, k, v),
        _att_case(
            normal(gen, (2, 3, 4), np.float32), normal(gen, (2, 5, 4), np.float32), normal(gen, (2, 5, 2), np.float32)
        ),
    ]


def _att_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 3)
    out = []
    for i in range(10):
        lead, dtype = BATCHES[i % len(BATCHES)], DTYPES[(i // 3) % 2]
        n_q, n_k, d_k, d_v = (int(gen.integers(1, 8)) for _ in range(4))
        scale = 10.0 ** gen.uniform(-1, 1.5)  # up to scores in the thousands
        out.append(
            _att_case(
                normal(gen, (*lead, n_q, d_k), dtype, scale),
                normal(gen, (*lead, n_k, d_k), dtype, scale),
                normal(gen, (*lead, n_k, d_v), dtype),
            )
        )
    return out


def _judge_shapes(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        q, k, v = args
        out, w = unpack(got, ("output", "weights"), name)
        exp_out, exp_w = lib.scaled_dot_product_attention(q, k, v, return_weights=True)
        for label, item, exp in (("output", out, exp_out), ("weights", w, exp_w)):
            if not isinstance(item, np.ndarray):
                raise Mismatch(f"{name}, {label}: not a numpy array; expected shape {exp.shape}")
            if item.shape != exp.shape:
                raise Mismatch(f"{name}, {label}: returned shape {item.shape}; expected shape {exp.shape}")

    return f"{judge_each(cases, results, one)} cases return (output, weights) of the right shapes"


def _judge_attention(cases: list[Case], results: list[ResultRecord]) -> str:
    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        q, k, v = args
        check_attention(got, q, k, v, what=name)

    return f"{judge_each(cases, results, one, precision=True)} cases match lib.scaled_dot_product_attention"


A.add(
    "one_query",
    ["attend_one_query"],
    points=2,
    cases=_one_visible,
    judge=_judge_one,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="seed 002's toy example and query 2 of the example sentence (float64 and float32)",
)
A.add(
    "one_query_hidden",
    ["attend_one_query"],
    points=2,
    cases=_one_hidden,
    judge=_judge_one,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="random sizes and magnitudes, float32 and float64",
)
A.add(
    "attention_shapes",
    ["attention"],
    points=1,
    cases=_att_visible,
    judge=_judge_shapes,
    description="attention returns (output, weights) of shapes (..., n_q, d_v) and (..., n_q, n_k)",
)
A.add(
    "attention_matrix",
    ["attention"],
    points=2,
    cases=_att_visible,
    judge=_judge_attention,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="the toy example, the example sentence and a float32 batch, compared with lib",
)
A.add(
    "attention_matrix_hidden",
    ["attention"],
    points=3,
    cases=_att_hidden,
    judge=_judge_attention,
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="random sizes, batch dimensions, large scores, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_attention_matrix = notebook_check(A, "attention_matrix")
check_attention_shapes = notebook_check(A, "attention_shapes")
check_one_query = notebook_check(A, "one_query")
check_before_submit = before_submit_check(A)
