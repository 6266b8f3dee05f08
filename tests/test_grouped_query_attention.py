"""lib.grouped_query_attention and lib.repeat_kv: query heads sharing key-value heads."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from naive_decoding import grouped
from strategies import bool_masks, grouped_cases

from sdpa_course import lib

TOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-11}


@given(grouped_cases(), st.booleans(), st.data())
def test_head_l_attends_over_key_value_head_l_over_group_size_as_plain_python_computes(case, causal, data):
    n_q, n_k = case.q.shape[-2], case.k.shape[-2]
    mask = data.draw(bool_masks((n_q, n_k)))
    out, weights = lib.grouped_query_attention(case.q, case.k, case.v, mask, is_causal=causal, return_weights=True)
    assert out.shape == (*case.q.shape[:-1], case.v.shape[-1]) and weights.shape == (*case.q.shape[:-1], n_k)
    allowed = (mask & lib.causal_mask(n_q, n_k) if causal else mask).tolist()
    tol = TOL[case.q.dtype]
    for idx in np.ndindex(*case.q.shape[:-3]):  # one batch entry at a time (a single () without batch)
        q, k, v = case.q[idx], case.k[idx], case.v[idx]
        ref_out, ref_w = grouped(q.astype(float).tolist(), k.astype(float).tolist(), v.astype(float).tolist(), allowed)
        np.testing.assert_allclose(out[idx], ref_out, rtol=tol, atol=tol)
        np.testing.assert_allclose(weights[idx], ref_w, rtol=tol, atol=tol)


@given(grouped_cases(), st.booleans())
def test_it_equals_attention_over_the_key_value_heads_copied_for_each_query_head(case, causal):
    h = case.q.shape[-3]
    out = lib.grouped_query_attention(case.q, case.k, case.v, is_causal=causal)
    copied = lib.scaled_dot_product_attention(
        case.q, lib.repeat_kv(case.k, h), lib.repeat_kv(case.v, h), is_causal=causal
    )
    np.testing.assert_allclose(out, copied, rtol=TOL[case.q.dtype], atol=TOL[case.q.dtype])


def test_as_many_key_value_heads_as_query_heads_is_multi_head_attention_to_the_last_bit():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 2, 4, 6, 5))
    for causal in (False, True):
        expected = lib.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert np.array_equal(lib.grouped_query_attention(q, k, v, is_causal=causal), expected)


def test_one_key_value_head_is_multi_query_attention_every_head_reads_it():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(4, 5, 3))
    k, v = rng.normal(size=(2, 1, 5, 3))
    out = lib.grouped_query_attention(q, k, v, is_causal=True)
    for head in range(4):
        np.testing.assert_allclose(out[head], lib.scaled_dot_product_attention(q[head], k[0], v[0], is_causal=True))


def test_repeat_kv_gives_each_group_of_consecutive_query_heads_its_own_head():
    kv = np.arange(3.0).reshape(3, 1, 1)  # three key-value heads
    assert lib.repeat_kv(kv, 6)[:, 0, 0].tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]
    assert lib.repeat_kv(kv, 3).tolist() == kv.tolist()


def test_a_mask_with_a_head_axis_is_applied_per_query_head():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 5, 2)), rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 2))
    mask = rng.random((4, 5, 3)) < 0.6
    _, weights = lib.grouped_query_attention(q, k, v, mask, return_weights=True)
    assert (weights[~mask] == 0).all()
    for head in range(4):
        _, own = lib.scaled_dot_product_attention(q[head], k[head // 2], v[head // 2], mask[head], return_weights=True)
        np.testing.assert_allclose(weights[head], own)


@pytest.mark.parametrize(
    "args, kwargs, error, words",
    [
        ((np.ones((3, 2, 4)), np.ones((2, 2, 4)), np.ones((2, 2, 4))), {}, ValueError, ["h_kv (2) must divide", "(3)"]),
        (
            (np.ones((4, 2, 4)), np.ones((2, 2, 4)), np.ones((1, 2, 4))),
            {},
            ValueError,
            ["same number of key-value heads"],
        ),
        (
            (np.ones((4, 2, 4)), np.ones((2, 2, 3)), np.ones((2, 2, 4))),
            {},
            ValueError,
            ["d_k of q (4) must equal d_k of k (3)"],
        ),
        (
            (np.ones((4, 2, 4)), np.ones((2, 2, 4)), np.ones((2, 3, 4))),
            {},
            ValueError,
            ["n_k of k (2) must equal n_k of v (3)"],
        ),
        (
            (np.ones((2, 4)), np.ones((2, 2, 4)), np.ones((2, 2, 4))),
            {},
            ValueError,
            ["q must have shape (..., h, n_q, d_k)"],
        ),
        (
            (np.ones((4, 2, 4)), np.ones((2, 2, 4)), np.ones((2, 2, 4)), np.ones((3, 2, 2), bool)),
            {},
            ValueError,
            ["mask of shape (3, 2, 2)", "(4, 2, 2)"],
        ),
    ],
)
def test_bad_shapes_are_named(args, kwargs, error, words):
    with pytest.raises(error) as info:
        lib.grouped_query_attention(*args, **kwargs)
    for word in words:
        assert word in str(info.value)


def test_repeat_kv_names_a_head_count_that_does_not_divide():
    with pytest.raises(ValueError, match=r"key-value heads \(2\) must divide n_heads \(3\)"):
        lib.repeat_kv(np.ones((2, 1, 1)), 3)
