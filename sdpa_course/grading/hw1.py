"""Homework 1: the raw score matrix ``e_ij = x_i . x_j``, a loop and then vectorized.

Learner functions: ``scores_loop(x)`` for x of shape (n, d), and
``scores_vectorized(x)`` for x of shape (..., n, d); both return the
(..., n, n) matrix of raw dot products, in the dtype of x.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .authoring import BATCHES, DTYPES, describe_inputs, generator, judge_each, normal
from .check import Assignment, Cases
from .compare import Mismatch, compare_arrays, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case
from .rules import IN_PLACE, NO_LOOP

A = Assignment("hw1_dot_product_scores", chapter="chapters/02_raw_dot_product_scores.md")

SMALL_X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])


def _case(call: str, x: np.ndarray, *, count_lines: bool = False) -> Case:
    return make_case(call, x, label=describe_inputs(x=x), count_lines=count_lines)


def _visible(call: str, batched: bool) -> Cases:
    def cases(seed: int) -> list[Case]:
        _, sentence = reference().example_sentence()
        out = [_case(call, SMALL_X), _case(call, sentence), _case(call, sentence.astype(np.float32))]
        if batched:
            gen = generator(seed, 1)
            out.append(_case(call, normal(gen, (2, 5, 3))))
        return out

    return cases


def _hidden(call: str, batched: bool) -> Cases:
    def cases(seed: int) -> list[Case]:
        gen = generator(seed, 2)
        out = []
        for i in range(8):
            lead = BATCHES[i % len(BATCHES)] if batched else ()
            n, d = int(gen.integers(1, 9)), int(gen.integers(1, 7))
            scale = 10.0 ** gen.uniform(-2, 2)
            out.append(_case(call, normal(gen, (*lead, n, d), DTYPES[i % 2], scale)))
        return out

    return cases


def _judge_scores(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        (x,) = args
        expected = lib.dot_product_scores(x)
        # Each e_ij sums d products; its rounding error scales with |x_i| |x_j|.
        scale = float(np.max(np.sum(x.astype(np.float64) ** 2, axis=-1), initial=1.0))
        compare_arrays(got, expected, what=name, scale=scale)

    return f"{judge_each(cases, results, one)} cases match lib.dot_product_scores"


def _no_loop_cases(seed: int) -> list[Case]:
    gen = generator(seed, 3)
    return [_case("scores_vectorized", normal(gen, (n, 4)), count_lines=True) for n in (3, 40)]


def _judge_no_loop(cases: list[Case], results: list[ResultRecord]) -> str:
    _judge_scores(cases, results)
    small, large = (r["lines"] for r in results)
    if small is None or large is None:
        raise Mismatch("the lines of Python that scores_vectorized runs were not counted")
    if large - small >= 20:
        raise Mismatch(
            f"scores_vectorized runs {_lines(small)} of Python for 3 tokens but {_lines(large)} for 40 tokens: it "
            "loops over the tokens. Compute all the scores with one matrix product instead "
            f"(x @ x.T, or x @ np.swapaxes(x, -1, -2) to allow batch dimensions). {NO_LOOP.statement}"
        )
    return (
        f"scores_vectorized runs {_lines(small)} of Python for 3 tokens and {_lines(large)} for 40: no loop over tokens"
    )


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


A.add(
    "scores_loop",
    ["scores_loop"],
    points=2,
    cases=_visible("scores_loop", False),
    judge=_judge_scores,
    description="scores_loop on a 3x2 matrix and the example sentence (float64 and float32)",
)
A.add(
    "scores_loop_hidden",
    ["scores_loop"],
    points=2,
    cases=_hidden("scores_loop", False),
    judge=_judge_scores,
    description="scores_loop on random (n, d) inputs, float64 and float32, compared with lib",
)
A.add(
    "scores_vectorized",
    ["scores_vectorized"],
    points=2,
    cases=_visible("scores_vectorized", True),
    judge=_judge_scores,
    description="scores_vectorized on the examples and one batch",
)
A.add(
    "scores_vectorized_hidden",
    ["scores_vectorized"],
    points=2,
    cases=_hidden("scores_vectorized", True),
    judge=_judge_scores,
    description="scores_vectorized on random inputs with batch dimensions, compared with lib",
)
A.add(
    "vectorized_no_loop",
    ["scores_vectorized"],
    points=2,
    cases=_no_loop_cases,
    judge=_judge_no_loop,
    rules=(IN_PLACE, NO_LOOP),
    description="scores_vectorized runs no Python loop over the tokens",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_scores_loop = notebook_check(A, "scores_loop")
check_scores_vectorized = notebook_check(A, "scores_vectorized")
check_vectorized_no_loop = notebook_check(A, "vectorized_no_loop")
check_before_submit = before_submit_check(A)
