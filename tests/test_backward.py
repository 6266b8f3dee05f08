"""lib.backward against central finite differences of lib.scaled_dot_product_attention.

The loss is L = sum(G * O) for a random G, so dL/dO = G. Each partial
derivative dL/dx is estimated independently of lib.backward by
(L(x + h) - L(x - h)) / 2h, in float64, one entry at a time.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import attention_cases, bool_masks, finite_arrays, logit_rows

from sdpa_course import lib

STEP = 1e-6
# The central difference's error is about h^2 |f'''| / 6 (truncation) plus
# eps |L| / h (rounding): with h = 1e-6, entries of size <= 4 and d <= 6, both
# are far below 1e-6 of the gradient's scale; a wrong gradient is off by O(1).
RTOL, ATOL = 1e-6, 1e-6


def numerical_gradient(loss, x: np.ndarray) -> np.ndarray:
    """Central finite differences of the scalar ``loss`` at ``x`` (float64)."""
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + STEP
        up = loss()
        x[idx] = old - STEP
        down = loss()
        x[idx] = old
        grad[idx] = (up - down) / (2 * STEP)
    return grad


def check_against_finite_differences(q, k, v, mask=None, **kw):
    q, k, v = (np.array(a, dtype=np.float64) for a in (q, k, v))
    out = lib.scaled_dot_product_attention(q, k, v, mask, **kw)
    g = np.random.default_rng(0).standard_normal(out.shape)

    def loss() -> float:
        return float(np.sum(g * lib.scaled_dot_product_attention(q, k, v, mask, **kw)))

    dq, dk, dv = lib.attention_backward(q, k, v, g, mask, **kw)
    for name, analytic, x in (("dq", dq, q), ("dk", dk, k), ("dv", dv, v)):
        scale = max(1.0, float(np.abs(analytic).max(initial=0.0)))
        np.testing.assert_allclose(analytic, numerical_gradient(loss, x), rtol=RTOL, atol=ATOL * scale, err_msg=name)


@settings(max_examples=40, deadline=None)
@given(attention_cases(dtype=np.float64), st.data())
def test_gradients_match_finite_differences_with_a_boolean_mask(case, data):
    mask = data.draw(bool_masks(case.q.shape[:-2] + (case.n_q, case.n_k)))
    check_against_finite_differences(case.q, case.k, case.v, mask)


@settings(max_examples=30, deadline=None)
@given(attention_cases(dtype=np.float64), st.booleans())
def test_gradients_match_finite_differences_causal_and_unmasked(case, causal):
    check_against_finite_differences(case.q, case.k, case.v, is_causal=causal)


@settings(max_examples=20, deadline=None)
@given(attention_cases(dtype=np.float64, batch=()), st.data(), st.floats(0.05, 2.0))
def test_gradients_match_finite_differences_with_a_float_mask_and_a_scale(case, data, scale):
    mask = data.draw(finite_arrays((case.n_q, case.n_k), bound=3.0))
    check_against_finite_differences(case.q, case.k, case.v, mask, scale=scale)


@settings(max_examples=20, deadline=None)
@given(attention_cases(dtype=np.float64, batch=(3,)), st.booleans())
def test_broadcast_inputs_get_gradients_summed_over_the_broadcast_dimension(case, causal):
    for k, v in ((case.k[0], case.v[0]), (case.k[:1], case.v[:1])):  # no batch axis; a batch axis of 1
        check_against_finite_differences(case.q, k, v, is_causal=causal)
        dq, dk, dv = lib.attention_backward(case.q, k, v, np.ones(case.q.shape[:-1] + (v.shape[-1],)), is_causal=causal)
        assert dq.shape == case.q.shape and dk.shape == k.shape and dv.shape == v.shape


@settings(max_examples=30, deadline=None)
@given(logit_rows, st.data())
def test_softmax_backward_matches_finite_differences(s, data):
    s = s / 10.0
    g = data.draw(finite_arrays(s.shape))

    def loss() -> float:
        return float(np.sum(g * lib.softmax(s)))

    analytic = lib.softmax_backward(lib.softmax(s), g)
    np.testing.assert_allclose(analytic, numerical_gradient(loss, s), rtol=RTOL, atol=ATOL)


@given(logit_rows, st.floats(-100, 100))
def test_softmax_backward_ignores_a_constant_added_to_the_incoming_gradient(s, c):
    a = lib.softmax(s)
    g = np.cos(s)
    np.testing.assert_allclose(lib.softmax_backward(a, g + c), lib.softmax_backward(a, g), atol=1e-9 * (1 + abs(c)))


@given(attention_cases(), st.data())
def test_fully_masked_rows_and_masked_keys_get_zero_gradient(case, data):
    mask = data.draw(bool_masks(case.q.shape[:-2] + (case.n_q, case.n_k)))
    mask[..., 0, :] = False  # query 0 may attend to nothing
    g = np.ones(case.q.shape[:-1] + (case.v.shape[-1],), dtype=case.q.dtype)
    dq, dk, dv = lib.attention_backward(case.q, case.k, case.v, g, mask)
    assert np.isfinite(dq).all() and np.isfinite(dk).all() and np.isfinite(dv).all()
    assert (dq[..., 0, :] == 0).all()
    never_read = ~mask.any(axis=-2)  # keys no query may attend to
    assert (dv[never_read] == 0).all() and (dk[never_read] == 0).all()


@given(attention_cases(dtype=np.float32), st.booleans())
def test_float32_stays_float32_and_agrees_with_float64(case, causal):
    g = np.ones(case.q.shape[:-1] + (case.v.shape[-1],), dtype=np.float32)
    grads32 = lib.attention_backward(case.q, case.k, case.v, g, is_causal=causal)
    grads64 = lib.attention_backward(*(a.astype(np.float64) for a in (case.q, case.k, case.v, g)), is_causal=causal)
    for g32, g64 in zip(grads32, grads64):
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-3 * max(1.0, float(np.abs(g64).max())))


def test_seed_toy_example_by_hand():
    """dL/dV = A^T G with G = ones: each value row gets its weight (0.6698, 0.3302)."""
    ex = lib.seed_toy_example()
    a0 = np.exp(2**-0.5) / (np.exp(2**-0.5) + 1)
    _, _, dv = lib.attention_backward(ex["q"], ex["k"], ex["v"], np.ones((1, 2)))
    np.testing.assert_allclose(dv, [[a0, a0], [1 - a0, 1 - a0]], rtol=1e-14)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            lambda: lib.attention_backward(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 5)), np.ones((2, 4))),
            r"grad_out must have the shape of the output \(2, 5\).*got shape \(2, 4\)",
        ),
        (
            lambda: lib.attention_backward(np.ones((2, 3)), np.ones((4, 2)), np.ones((4, 5)), np.ones((2, 5))),
            r"d_k of q \(3\) must equal d_k of k \(2\)",
        ),
        (
            lambda: lib.attention_backward(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 5)), np.full((2, 5), np.nan)),
            r"grad_out must be finite",
        ),
        (
            lambda: lib.softmax_backward(np.ones((2, 3)) / 3, np.ones((3, 2))),
            r"grad_weights must have the shape of weights \(2, 3\); got shape \(3, 2\)",
        ),
        (
            lambda: lib.softmax_backward(np.ones(3) / 3, np.ones(3), axis=1),
            r"axis 1 is out of range for weights of shape \(3,\)",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(call, words):
    with pytest.raises(ValueError, match=words):
        call()
