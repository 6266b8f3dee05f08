"""Property-based tests of lib's attention (Hypothesis)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from naive import naive_attention
from strategies import attention_cases, bool_masks, logit_rows

from sdpa_course import lib

TOL = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-11}


def close(a, b, dtype):
    np.testing.assert_allclose(a, b, rtol=TOL[np.dtype(dtype)], atol=TOL[np.dtype(dtype)])


@given(attention_cases(batch=()), st.data())
def test_matches_an_independent_pure_python_attention(case, data):
    mask = data.draw(bool_masks((case.n_q, case.n_k)))
    out, w = lib.scaled_dot_product_attention(case.q, case.k, case.v, mask, return_weights=True)
    ref_out, ref_w = naive_attention(
        case.q.astype(float).tolist(),
        case.k.astype(float).tolist(),
        case.v.astype(float).tolist(),
        allowed=mask.tolist(),
    )
    close(w, ref_w, case.q.dtype)
    close(out, ref_out, case.q.dtype)


@given(attention_cases(), st.data())
def test_rows_sum_to_one_or_are_all_zero_when_fully_masked(case, data):
    mask = data.draw(bool_masks(case.q.shape[:-2] + (case.n_q, case.n_k)))
    out, w = lib.scaled_dot_product_attention(case.q, case.k, case.v, mask, return_weights=True)
    sums = w.sum(axis=-1)
    has_key = mask.any(axis=-1)
    np.testing.assert_allclose(sums[has_key], 1.0, atol=1e-5)
    assert (w[~has_key] == 0).all()
    assert (out[~has_key] == 0).all()


@given(attention_cases(), st.data())
def test_masked_entries_get_exactly_zero_weight(case, data):
    mask = data.draw(bool_masks((case.n_q, case.n_k)))
    _, w = lib.scaled_dot_product_attention(case.q, case.k, case.v, mask, return_weights=True)
    assert (w[..., ~mask] == 0).all()


@given(attention_cases(square=True), st.data())
def test_causal_output_i_ignores_keys_and_values_after_i(case, data):
    n = case.n_q
    i = data.draw(st.integers(0, n - 1))
    k2, v2 = case.k.copy(), case.v.copy()
    k2[..., i + 1 :, :] = data.draw(st.floats(-3, 3)) + 1.5 * k2[..., i + 1 :, :]
    v2[..., i + 1 :, :] = -7.0 * v2[..., i + 1 :, :] + 1.0
    before = lib.scaled_dot_product_attention(case.q, case.k, case.v, is_causal=True)
    after = lib.scaled_dot_product_attention(case.q, k2, v2, is_causal=True)
    np.testing.assert_array_equal(before[..., : i + 1, :], after[..., : i + 1, :])


@given(attention_cases(), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_leaves_the_output_unchanged(case, rnd):
    perm = list(range(case.n_k))
    rnd.shuffle(perm)
    out = lib.scaled_dot_product_attention(case.q, case.k, case.v)
    permuted = lib.scaled_dot_product_attention(case.q, case.k[..., perm, :], case.v[..., perm, :])
    close(out, permuted, case.q.dtype)


@given(logit_rows, st.data())
def test_softmax_is_invariant_to_a_constant_added_per_row(x, data):
    shift = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=x.shape[0], max_size=x.shape[0])))
    np.testing.assert_allclose(lib.softmax(x + shift[:, None]), lib.softmax(x), atol=1e-12)


@given(attention_cases(batch=()), st.booleans())
def test_one_head_with_identity_projections_is_single_head_attention(case, causal):
    d = case.q.shape[-1]
    x = case.q
    eye = np.eye(d, dtype=x.dtype)
    mha = lib.multi_head_attention(x, eye, eye, eye, eye, n_heads=1, is_causal=causal)
    single = lib.scaled_dot_product_attention(x, x, x, is_causal=causal)
    close(mha, single, x.dtype)


@given(attention_cases(batch=()), st.data())
def test_loop_over_queries_equals_the_matrix_form(case, data):
    mask = data.draw(bool_masks((case.n_q, case.n_k)))
    out, w = lib.scaled_dot_product_attention(case.q, case.k, case.v, mask, return_weights=True)
    for i in range(case.n_q):
        o_i, a_i = lib.attend_one_query(case.q[i], case.k, case.v, allowed=mask[i])
        close(a_i, w[i], case.q.dtype)
        close(o_i, out[i], case.q.dtype)


@given(attention_cases(), st.data())
def test_float_mask_of_minus_inf_matches_the_boolean_mask(case, data):
    mask = data.draw(bool_masks((case.n_q, case.n_k)))
    additive = np.where(mask, 0.0, -np.inf)
    a = lib.scaled_dot_product_attention(case.q, case.k, case.v, mask)
    b = lib.scaled_dot_product_attention(case.q, case.k, case.v, additive)
    np.testing.assert_array_equal(a, b)


@given(attention_cases(), st.floats(0.01, 3.0))
def test_explicit_scale_equals_prescaling_the_queries(case, scale):
    a = lib.scaled_dot_product_attention(case.q, case.k, case.v, scale=scale)
    b = lib.scaled_dot_product_attention(case.q * np.asarray(scale, case.q.dtype), case.k, case.v, scale=1.0)
    close(a, b, case.q.dtype)


@given(attention_cases())
def test_dtype_is_kept_and_shapes_follow_the_convention(case):
    out, w = lib.scaled_dot_product_attention(case.q, case.k, case.v, return_weights=True)
    lead = np.broadcast_shapes(case.q.shape[:-2], case.k.shape[:-2])
    assert out.dtype == case.q.dtype and w.dtype == case.q.dtype
    assert out.shape == (*lead, case.n_q, case.v.shape[-1])
    assert w.shape == (*lead, case.n_q, case.n_k)


@given(attention_cases(batch=(2, 3)))
def test_batched_call_equals_one_call_per_batch_entry(case):
    out = lib.scaled_dot_product_attention(case.q, case.k, case.v, is_causal=True)
    for b in range(2):
        for h in range(3):
            one = lib.scaled_dot_product_attention(case.q[b, h], case.k[b, h], case.v[b, h], is_causal=True)
            close(out[b, h], one, case.q.dtype)
