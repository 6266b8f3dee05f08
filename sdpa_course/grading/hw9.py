"""Homework 9: the backward pass of attention.

Learner functions:

``softmax_backward(a, grad_a)``
    ``a`` = softmax(s) along the last axis (rows of weights; a masked entry
    has weight 0, a row with nothing permitted is all 0) and ``grad_a`` =
    dL/da of the same shape; returns dL/ds = a * (grad_a - rowsum(grad_a * a)).
``attention_backward(q, k, v, grad_out, mask=None)``
    q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v) with the same
    leading dimensions, grad_out = dL/dO (..., n_q, d_v), mask None or
    boolean (n_q, n_k) (True = may attend). Returns ``(dq, dk, dv)`` for
    O = softmax(Q K^T / sqrt(d_k), masked) V, each of its input's shape;
    float32 stays float32.

Expected values come from ``lib.softmax_backward`` and
``lib.attention_backward`` (which the tests check against central finite
differences of ``lib.scaled_dot_product_attention``).

Tolerances. For ``softmax_backward`` the weights are given, so the only
rounding is that of the row sum ``sum_j a_j grad_a_j`` (n terms, any order)
and of a few products: an entry may differ from lib's by ``rtol * (|expected|
+ S)`` with ``rtol`` = :func:`grading.authoring.row_sum_tol` (the dtype's base
tolerance plus ``(n + 2) eps``) and S the largest entry of
``a (|grad_a| + sum_j a_j |grad_a_j|)`` (the same formula on absolute values,
which no cancellation can make small). For ``attention_backward`` (see
:func:`gradient_tolerances`): an entry may differ from lib's
by ``rtol * (|expected| + S)``, where S is the largest entry of the same
formula evaluated on absolute values (no cancellation), and rtol is

- twice :func:`grading.authoring.attention_rtol`, the weights' relative error
  from rounding in the logits: a relative error d in each weight changes
  ``dS = A (dA - sum_j dA_j A_j)`` by at most ``2 d`` times S, because the
  weights enter twice (as the factor and inside the row sum); ``dV = A^T dO``
  by at most ``d`` times its S;
- plus ``4 * eps * (n_q + n_k + d_k + d_v)``, the rounding of the sums of
  the backward pass (each at most that long, in any order: einsum, loops or
  an explicit Jacobian all stay within it).

The independent implementations of ``tests/test_homework_tolerances.py``
(float32 throughout, float64 inside, Python loops, q and k scaled
separately) pass with it, also when large scores make the weights nearly
one-hot. A mistake (no scale, A instead of A^T, no row-sum term) changes the
gradient by a fraction of order one, far above these bounds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .authoring import (
    DTYPES,
    HINTS,
    attention_rtol,
    describe_inputs,
    filled_weights,
    generator,
    inexact_root,
    judge_each,
    normal,
    row_sum_tol,
    unpack,
)
from .check import Assignment
from .compare import Judge, Mismatch, Partial, check_form, compare_arrays, reference
from .notebook import before_submit_check, notebook_check
from .plain import Case, ResultRecord, make_case
from .rules import DTYPE, IN_PLACE, PRECISION

A = Assignment("hw9_attention_backward", chapter="chapters/09_a_head_that_learns.md")


def _eps(dtype: DTypeLike) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def _softmax_rtol(a: np.ndarray) -> float:
    """rtol for dL/ds: the base tolerance of the dtype plus the rounding of one row sum of n terms."""
    return row_sum_tol(a.dtype, None, a.shape[-1])


def _softmax_scale(a: np.ndarray, g: np.ndarray) -> float:
    """S for dL/ds = a (g - sum(g a)): the same formula on absolute values."""
    a, g = np.abs(a.astype(np.float64)), np.abs(g.astype(np.float64))
    return max(1e-300, float((a * (g + (g * a).sum(-1, keepdims=True))).max(initial=0.0)))


# ------------------------------------------------------------- softmax backward


def _rows(gen: np.random.Generator, shape: tuple[int, ...], dtype: DTypeLike, masked: bool) -> np.ndarray:
    lib = reference()
    s = gen.standard_normal(shape) * 2.0
    if masked:
        s[gen.random(shape) < 0.3] = -np.inf
        s.reshape(-1, shape[-1])[0] = -np.inf  # a row with nothing permitted
    rows: np.ndarray = lib.softmax(s)
    return rows.astype(dtype)


def _softmax_case(a: np.ndarray, g: np.ndarray, note: str = "") -> Case:
    label = describe_inputs(a=a, grad_a=g) + (f", {note}" if note else "")
    return make_case("softmax_backward", a, g, label=label)


def _softmax_visible(seed: int) -> list[Case]:
    gen = generator(seed, 1)
    return [
        _softmax_case(np.array([0.5, 0.5]), np.array([1.0, 0.0]), "one row of two equal weights"),
        _softmax_case(
            np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]]),
            np.array([[1.0, -2.0, 0.5], [3.0, 3.0, 3.0]]),
            "the second row's grad_a is constant",
        ),
        _softmax_case(
            np.array([[0.4, 0.0, 0.6], [0.0, 0.0, 0.0]]),
            np.array([[1.0, 5.0, -1.0], [2.0, 1.0, 0.0]]),
            "a masked entry (weight 0) and a row with nothing permitted",
        ),
        _softmax_case(_rows(gen, (2, 3, 5), np.float32, False), normal(gen, (2, 3, 5), np.float32)),
    ]


def _softmax_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 2)
    out = []
    for i in range(8):
        lead = ((), (3,), (2, 2))[i % 3]
        dtype = DTYPES[(i // 2) % 2]
        shape = (*lead, int(gen.integers(1, 6)), int(gen.integers(1, 9)))
        a = _rows(gen, shape, dtype, masked=i % 2 == 1)
        g = normal(gen, shape, dtype, scale=10.0 ** gen.uniform(-1, 1))
        out.append(_softmax_case(a, g, "with masked entries and a row with nothing permitted" if i % 2 else ""))
    return out


def _judge_softmax(cases: list[Case], results: list[ResultRecord]) -> str:
    lib = reference()

    def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
        a, g = args
        expected = lib.softmax_backward(a, g)
        check_form(got, expected, what=name)
        try:
            compare_arrays(got, expected, what=name, scale=_softmax_scale(a, g), rtol=_softmax_rtol(a))
        except Mismatch as exc:
            got64 = got.astype(np.float64)
            if np.allclose(got64, a * g, rtol=1e-4, atol=1e-7):
                raise Mismatch(
                    f"{exc}. Hint: this is a * grad_a, {HINTS['no_row_sum_term']}: the weights of a "
                    "row sum to 1, so raising one lowers the others; subtract sum_j a_j grad_a_j "
                    "from grad_a before multiplying by a"
                ) from None
            if np.allclose(got64, g - (g * a).sum(-1, keepdims=True), rtol=1e-4, atol=1e-7):
                raise Mismatch(f"{exc}. Hint: multiply (grad_a - rowsum(grad_a * a)) {HINTS['not_times_a']}") from None
            raise

    return f"{judge_each(cases, results, one)} cases match lib.softmax_backward"


# ------------------------------------------------------------- attention backward


def _attention_case(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, mask: np.ndarray | None = None, note: str = ""
) -> Case:
    label = describe_inputs(q=q, k=k, v=v, grad_out=g) + (f", {note}" if note else ", no mask")
    return make_case("attention_backward", q, k, v, g, mask, label=label)


def _attention_visible(seed: int) -> list[Case]:
    lib = reference()
    gen = generator(seed, 3)
    ex = lib.seed_toy_example()
    q, k, v = (normal(gen, s) for s in ((4, 3), (5, 3), (5, 2)))
    mask = gen.random((4, 5)) < 0.6
    mask[:, 0] = True
    mask[2] = False  # query 2 may attend to no key
    q6, k6, v6 = (normal(gen, (6, d), np.float32) for d in (4, 4, 3))
    return [
        _attention_case(ex["q"], ex["k"], ex["v"], np.ones((1, 2)), note="seed 002's toy example, L = sum of O"),
        _attention_case(q, k, v, normal(gen, (4, 2))),
        _attention_case(q, k, v, normal(gen, (4, 2)), mask, note="a boolean mask; query 2 may attend to no key"),
        _attention_case(q6, k6, v6, normal(gen, (6, 3), np.float32), np.tri(6, dtype=bool), note="causal mask"),
    ]


def _attention_hidden(seed: int) -> list[Case]:
    gen = generator(seed, 4)
    out = []
    for i in range(8):
        lead = ((), (2,), (2, 3))[i % 3]
        dtype = DTYPES[(i // 2) % 2]
        n_q, n_k = int(gen.integers(1, 8)), int(gen.integers(1, 8))
        d_k, d_v = int(gen.integers(2, 9)), int(gen.integers(1, 6))
        if i == 0:  # float64, no mask: every seed has a case where a scale (computed in float32,
            # or missing from dQ and dK) shows, as its queries attend to two keys or more
            d_k, n_k = inexact_root(d_k), max(n_k, 2)
        scale = 10.0 ** gen.uniform(-0.5, 0.3)
        q, k = normal(gen, (*lead, n_q, d_k), dtype, scale), normal(gen, (*lead, n_k, d_k), dtype, scale)
        v, g = normal(gen, (*lead, n_k, d_v), dtype), normal(gen, (*lead, n_q, d_v), dtype)
        mask, note = None, ""
        if i % 4 == 1:
            mask, note = np.tri(n_q, n_k, dtype=bool), "causal mask"
        elif i % 4 == 3:
            # Cases 3 (2-D) and 7 (batched) have a query with nothing permitted, whatever the seed.
            mask, note = gen.random((n_q, n_k)) < 0.6, "random mask; query 0 may attend to no key"
            mask[0] = False
        out.append(_attention_case(q, k, v, g, mask, note))
    return out


def gradient_tolerances(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, mask: np.ndarray | None
) -> dict[str, tuple[float, float]]:
    """(rtol, S) for dq, dk and dv; see the module's docstring for the derivation."""
    lib = reference()
    _, a = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    a = a.astype(np.float64)
    aq, ak, av, ag = (np.abs(x.astype(np.float64)) for x in (q, k, v, g))
    factor = 1.0 / np.sqrt(q.shape[-1])
    da = ag @ np.swapaxes(av, -1, -2)
    ds = a * (da + (da * a).sum(-1, keepdims=True))
    bounds = {"dq": factor * ds @ ak, "dk": factor * np.swapaxes(ds, -1, -2) @ aq, "dv": np.swapaxes(a, -1, -2) @ ag}
    n_q, n_k, d_k, d_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    rtol = 2 * attention_rtol(q, k) + 4 * _eps(np.result_type(q, k, v, g)) * (n_q + n_k + d_k + d_v)
    return {name: (rtol, max(1e-300, float(b.max(initial=0.0)))) for name, b in bounds.items()}


def _attention_judge(parts: tuple[str, ...]) -> Judge:
    def judge(cases: list[Case], results: list[ResultRecord]) -> str:
        lib = reference()

        def one(args: list[Any], kwargs: dict[str, Any], got: Any, name: str) -> None:
            q, k, v, g, mask = args
            expected = dict(zip(("dq", "dk", "dv"), lib.attention_backward(q, k, v, g, mask)))
            got = dict(zip(("dq", "dk", "dv"), unpack(got, ("dq", "dk", "dv"), name)))
            tols = gradient_tolerances(q, k, v, g, mask)
            for part in parts:
                what = f"{name}, {part}"
                if isinstance(got[part], np.ndarray) and part == "dv" and got[part].shape != expected[part].shape:
                    a = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)[1]
                    if got[part].shape == (a @ g).shape:
                        raise Mismatch(
                            f"{what} returned shape {got[part].shape}; expected {expected[part].shape}. "
                            f"Hint: {HINTS['dv_not_transposed']}"
                        ) from None
                if (
                    isinstance(got[part], np.ndarray)
                    and part == "dk"
                    and got[part].shape != expected["dk"].shape
                    and got[part].shape == expected["dq"].shape
                ):
                    raise Mismatch(
                        f"{what} returned shape {got[part].shape}; expected {expected[part].shape}. "
                        f"Hint: that is the shape of dQ (n_q, d_k): {HINTS['dk_as_dq']} is (n_k, d_k)"
                    ) from None
                check_form(got[part], expected[part], what=what)
                rtol, bound = tols[part]
                try:
                    compare_arrays(got[part], expected[part], what=what, scale=bound, rtol=rtol)
                except Mismatch as exc:
                    raise Mismatch(f"{exc}{_attention_hint(part, got[part], q, k, v, g, mask)}") from None

        try:
            count = judge_each(cases, results, one, precision=True)
        except Mismatch as exc:
            if "raised" in str(exc) and "matmul" in str(exc):
                message = (
                    f"{exc}. Hint: a matrix product got shapes that do not fit. With A of shape "
                    "(n_q, n_k): dV = A^T dO is (n_k, d_v), dA = dO V^T is (n_q, n_k), dQ = dS K is "
                    "(n_q, d_k), dK = dS^T Q is (n_k, d_k)"
                )
                # the cases that were right keep their share
                raise (Partial(message, exc.fraction) if exc.fraction > 0 else Mismatch(message)) from None
            raise
        return f"{count} cases: {', '.join(parts)} match lib.attention_backward"

    return judge


def _attention_hint(
    part: str, got: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, mask: np.ndarray | None
) -> str:
    """Name the usual mistake that ``got`` matches, if any."""
    lib = reference()
    got = got.astype(np.float64)
    if np.isnan(got).any():
        if mask is not None and not np.asarray(mask).any(axis=-1).all():
            i = int(np.flatnonzero(~np.asarray(mask).any(axis=-1))[0])
            return (
                f". Hint: query {i} may attend to no key: its weights must be all 0, so "
                f"{HINTS['softmax_nan_empty_row']} (shift it by 0, divide only where the sum is positive), "
                "not NaN; then it gets no gradient, and its NaN does not spread to dK and dV"
            )
        return ". Hint: the result contains NaN; look for -inf - (-inf) or 0 / 0 in the forward pass"
    q, k, v, g = (x.astype(np.float64) for x in (q, k, v, g))
    d_k = q.shape[-1]

    def close(x: np.ndarray) -> bool:
        return bool(np.allclose(got, x, rtol=1e-4, atol=1e-6 * max(1.0, float(np.abs(x).max(initial=0)))))

    if mask is not None and not np.asarray(mask).any(axis=-1).all():
        # a large negative fill: the fully masked query's weights spread evenly (filled_weights)
        _, a = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
        filled = filled_weights(a, mask)
        da = g @ np.swapaxes(v, -1, -2)
        ds = filled * (da - (da * filled).sum(-1, keepdims=True)) / np.sqrt(d_k)
        wrong = {"dq": ds @ k, "dk": np.swapaxes(ds, -1, -2) @ q, "dv": np.swapaxes(filled, -1, -2) @ g}[part]
        if close(wrong):
            i = int(np.flatnonzero(~np.asarray(mask).any(axis=-1))[0])
            return (
                f". Hint: it matches weights where query {i}, which may attend to no key, spreads its weight "
                f"evenly over the keys: {HINTS['large_negative_fill']} Use -inf, so that such a query gets "
                "zero weights and no gradient"
            )

    if part in ("dq", "dk"):
        index = ("dq", "dk").index(part)
        if close(lib.attention_backward(q, k, v, g, mask)[index] * np.sqrt(d_k)):
            return (
                ". Hint: the scores are S = Q K^T / sqrt(d_k), so dQ and dK carry the factor 1/sqrt(d_k) "
                f"{HINTS['chain_rule_scale_missing']}"
            )
        _, a = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
        ds = a * (g @ np.swapaxes(v, -1, -2)) / np.sqrt(d_k)
        wrong = ds @ k if part == "dq" else np.swapaxes(ds, -1, -2) @ q
        if close(wrong):
            return (
                f". Hint: it matches a softmax backward {HINTS['no_row_sum_term']}: "
                "dS = A * (dA - rowsum(dA * A)), not A * dA"
            )
        if part == "dk":
            right = lib.attention_backward(q, k, v, g, mask)
            if right[0].shape == got.shape and close(right[0]):
                return f". Hint: this is dQ; {HINTS['dk_as_dq']}"
    if part == "dv":
        _, a = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
        if a.shape[-1] == a.shape[-2] and close(a @ g):
            return f". Hint: {HINTS['dv_not_transposed']}: key j's value is read by every query i"
    return ""


A.add(
    "softmax_backward",
    ["softmax_backward"],
    points=2,
    cases=_softmax_visible,
    judge=_judge_softmax,
    description="small rows, a constant incoming gradient, a masked entry, a row with nothing permitted, float32",
)
A.add(
    "softmax_backward_hidden",
    ["softmax_backward"],
    points=2,
    cases=_softmax_hidden,
    judge=_judge_softmax,
    description="random weights with masked entries and empty rows, batch dimensions, float32 and float64",
)
A.add(
    "attention_dv",
    ["attention_backward"],
    points=1,
    cases=_attention_visible,
    judge=_attention_judge(("dv",)),
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="dV on the seed's toy example, random inputs, a mask with an empty row, a causal float32 case",
)
A.add(
    "attention_dv_hidden",
    ["attention_backward"],
    points=1,
    cases=_attention_hidden,
    judge=_attention_judge(("dv",)),
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="dV on random sizes, batch dimensions, causal and random masks, float32 and float64",
)
A.add(
    "attention_dq_dk",
    ["attention_backward"],
    points=2,
    cases=_attention_visible,
    judge=_attention_judge(("dq", "dk")),
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="dQ and dK on the same inputs as attention_dv",
)
A.add(
    "attention_dq_dk_hidden",
    ["attention_backward"],
    points=2,
    cases=_attention_hidden,
    judge=_attention_judge(("dq", "dk")),
    rules=(IN_PLACE, DTYPE, PRECISION),
    description="dQ and dK on random sizes, batch dimensions, causal and random masks, float32 and float64",
)

# What the notebook's test cells call (grading.notebook.notebook_check): one per check and its hidden twin.
check_attention_dq_dk = notebook_check(A, "attention_dq_dk")
check_attention_dv = notebook_check(A, "attention_dv")
check_softmax_backward = notebook_check(A, "softmax_backward")
check_before_submit = before_submit_check(A)
