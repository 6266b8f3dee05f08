"""Every error path of lib names what was expected and what arrived."""

import numpy as np
import pytest

from sdpa_course import lib

q = np.ones((3, 4))
k = np.ones((5, 4))
v = np.ones((5, 2))


@pytest.mark.parametrize(
    "args, kwargs, error, words",
    [
        ((np.ones(4), k, v), {}, ValueError, ["q must have shape (..., n_q, d_k)", "got shape (4,)"]),
        ((q, np.ones(4), v), {}, ValueError, ["k must have shape (..., n_k, d_k)", "got shape (4,)"]),
        ((q, k, np.ones(5)), {}, ValueError, ["v must have shape (..., n_k, d_v)", "got shape (5,)"]),
        ((q, np.ones((5, 3)), v), {}, ValueError, ["d_k of q (4) must equal d_k of k (3)", "(3, 4)", "(5, 3)"]),
        ((q, k, np.ones((6, 2))), {}, ValueError, ["n_k of k (5) must equal n_k of v (6)", "(5, 4)", "(6, 2)"]),
        ((q, k, v, np.ones((2, 2), bool)), {}, ValueError, ["mask of shape (2, 2)", "(3, 5)"]),
        (
            (np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((3, 5, 2))),
            {},
            ValueError,
            ["do not broadcast", "(2, 3, 4)", "(3, 5, 4)"],
        ),
        ((np.array([["a", "b"]]), k, v), {}, TypeError, ["q must hold real numbers", "<U1"]),
        ((q.astype(complex), k, v), {}, TypeError, ["q must hold real numbers", "complex128"]),
        ((q, k.astype(object), v), {}, TypeError, ["k must hold real numbers", "object"]),
        ((q > 0, k, v), {}, TypeError, ["q must hold real numbers, not booleans"]),
        ((np.where(q > 0, np.nan, 0), k, v), {}, ValueError, ["q must be finite", "NaN or inf", "(0, 0)"]),
        ((q, np.full((5, 4), np.inf), v), {}, ValueError, ["k must be finite", "20 NaN or inf"]),
        ((q, k, np.full((5, 2), -np.inf)), {}, ValueError, ["v must be finite"]),
        ((q, k, v, np.full((3, 5), np.nan)), {}, ValueError, ["mask must be finite", "NaN or +inf"]),
        ((q, k, v), {"scale": float("nan")}, ValueError, ["scale must be finite"]),
        ((q, k, v), {"scale": "big"}, TypeError, ["scale must be a real number"]),
        ((np.full((1, 2), 1e200), np.full((1, 2), 1e200), np.ones((1, 1))), {}, ValueError, ["overflow", "rescale"]),
    ],
)
def test_attention_errors_name_expected_and_actual(args, kwargs, error, words):
    with pytest.raises(error) as info:
        lib.scaled_dot_product_attention(*args, **kwargs)
    for word in words:
        assert word in str(info.value)


def _w(shape):
    return np.ones(shape)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (
            lambda: lib.multi_head_attention(
                np.ones((3, 6)), _w((6, 6)), _w((6, 6)), _w((6, 6)), _w((6, 6)), n_heads=4
            ),
            ValueError,
            ["n_heads (4) must divide the width of w_q", "(6, 6)"],
        ),
        (
            lambda: lib.split_heads(np.ones((3, 6)), 4),
            ValueError,
            ["n_heads (4) must divide the width of x (6)", "(3, 6)"],
        ),
        (
            lambda: lib.multi_head_attention(
                np.ones((3, 6)), _w((6, 6)), _w((6, 6)), _w((6, 6)), _w((4, 6)), n_heads=2
            ),
            ValueError,
            ["w_o must have shape (h*d_v, d_out) = (6, d_out)", "(4, 6)"],
        ),
        (
            lambda: lib.multi_head_attention(
                np.ones((3, 6)), _w((5, 6)), _w((6, 6)), _w((6, 6)), _w((6, 6)), n_heads=2
            ),
            ValueError,
            ["w_q must have shape (6, width)", "(5, 6)"],
        ),
        (
            lambda: lib.multi_head_attention(
                np.ones((3, 6)), _w((6, 6)), _w((6, 4)), _w((6, 6)), _w((6, 6)), n_heads=2
            ),
            ValueError,
            ["w_q and w_k must have the same width", "(6, 6)", "(6, 4)"],
        ),
        (
            lambda: lib.multi_head_attention(np.ones((3, 6)), *[_w((6, 6))] * 4, n_heads=0),
            ValueError,
            ["n_heads must be 1 or more"],
        ),
        (
            lambda: lib.multi_head_attention(np.ones((3, 6)), *[_w((6, 6))] * 4, n_heads=2.0),
            TypeError,
            ["n_heads must be an integer"],
        ),
        (
            lambda: lib.project_qkv(np.ones((3, 4)), _w((4, 2)), _w((4, 3)), _w((4, 2))),
            ValueError,
            ["w_q and w_k must have the same width d_k", "(4, 2)", "(4, 3)"],
        ),
        (
            lambda: lib.project_qkv(np.ones((3, 4)), _w((5, 2)), _w((4, 2)), _w((4, 2))),
            ValueError,
            ["w_q must have shape", "(3, 4)", "(5, 2)"],
        ),
        (
            lambda: lib.dot_product_scores(np.ones((3, 4)), np.ones((3, 5))),
            ValueError,
            ["same vector width", "(3, 4)", "(3, 5)"],
        ),
        (lambda: lib.causal_mask(2.5), TypeError, ["n_q must be an integer"]),
        (lambda: lib.causal_mask(3, -1), ValueError, ["n_k must be 0 or more"]),
        (lambda: lib.softmax(np.array([1.0, np.inf])), ValueError, ["x must be finite", "NaN or +inf"]),
        (lambda: lib.softmax(3.0), ValueError, ["at least one dimension", "got shape ()"]),
        (
            lambda: lib.attend_one_query(np.ones((1, 2)), np.ones((2, 2)), np.ones((2, 2))),
            ValueError,
            ["q_i must have shape (d_k,)", "(1, 2)"],
        ),
    ],
)
def test_other_functions_reject_bad_input_clearly(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value)
