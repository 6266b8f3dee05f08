"""Homework 2: a numerically stable softmax over the last axis.

Learner function: ``softmax_rows(z)`` for z of shape (..., n): every slice
along the last axis becomes weights that are positive and sum to 1. It must
survive logits of 1e4 in float32, give weight 0 to ``-inf`` entries and all
zeros to a row made only of ``-inf``, and keep float32 as float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .authoring import BATCHES, DTYPES, describe_inputs, generator, judge_each, judge_softmax_case, normal
from .check import Assignment
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case

A = Assignment("hw2_stable_softmax", chapter="chapters/01_self_attention.md")

NEG = -np.inf


def _case(z: np.ndarray, note: str = "") -> Case:
    label = describe_inputs(z=z) + (f", {note}" if note else "")
    return make_case("softmax_rows", z, label=label)


def _basic_cases(seed: int) -> list[Case]:
    gen = generator(seed, 1)
    return [
        _case(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, 5.0, 2.0]])),
        _case(np.array([0.5, -0.5])),
        _case(normal(gen, (2, 3, 4)).astype(np.float32)),
    ]


def _large_cases(seed: int) -> list[Case]:
    return [
        _case(np.array([[1e4, 1e4 - 1, 0.0], [-1e4, 0.0, 1e4]], dtype=np.float32), "logits of 1e4"),
        _case(np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1000.5]]), "logits of +-1000"),
    ]


def _masked_cases(seed: int) -> list[Case]:
    z = np.array([[0.0, NEG, 1.0], [NEG, NEG, NEG], [2.0, NEG, NEG]])
    return [_case(z, "with -inf entries and a row of -inf"), _case(z.astype(np.float32), "with -inf entries")]


def _hidden_cases(seed: int) -> list[Case]:
    gen = generator(seed, 2)
    out = []
    for i in range(12):
        lead = BATCHES[i % len(BATCHES)]
        n = int(gen.integers(1, 10))
        dtype = DTYPES[(i // 3) % 2]
        scale = 10.0 ** gen.uniform(-1, 4)  # logits up to about 1e4
        z = gen.standard_normal((*lead, n)) * scale + gen.choice([0.0, 1e4, -1e4])
        note = ""
        if i % 3 == 2:  # -inf entries, some whole rows
            z[gen.random(z.shape) < 0.35] = NEG
            if z.ndim > 1:
                z.reshape(-1, n)[0] = NEG
            note = "with -inf entries"
        out.append(_case(z.astype(dtype), note))
    return out


def _judge_softmax(cases: list[Case], results: list[ResultRecord]) -> str:
    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        (z,) = args
        judge_softmax_case(got, z, what=name)

    return f"{judge_each(cases, results, one)} cases match lib.softmax"


A.add(
    "softmax_basic",
    ["softmax_rows"],
    points=2,
    cases=_basic_cases,
    judge=_judge_softmax,
    description="small inputs: rows sum to 1, 1-D and 3-D input, float32 stays float32",
)
A.add(
    "softmax_large",
    ["softmax_rows"],
    points=2,
    cases=_large_cases,
    judge=_judge_softmax,
    description="logits of 1e4 (float32) and 1000 (float64) do not overflow",
)
A.add(
    "softmax_masked",
    ["softmax_rows"],
    points=2,
    cases=_masked_cases,
    judge=_judge_softmax,
    description="-inf entries get weight 0; a row of -inf gives all zeros",
)
A.add(
    "softmax_hidden",
    ["softmax_rows"],
    points=4,
    cases=_hidden_cases,
    judge=_judge_softmax,
    description="random logits up to 1e4, batch dimensions, -inf entries and rows, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_softmax = notebook_check(A, "softmax")
check_softmax_basic = notebook_check(A, "softmax_basic")
check_softmax_large = notebook_check(A, "softmax_large")
check_softmax_masked = notebook_check(A, "softmax_masked")
check_before_submit = before_submit_check(A)
