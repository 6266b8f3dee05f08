"""Extreme but valid input: finite results, no NaN, no RuntimeWarning.

pytest runs with warnings turned into errors (pyproject), so any
RuntimeWarning from numpy fails these tests.
"""

import warnings

import numpy as np
import pytest

from sdpa_course import lib


@pytest.mark.parametrize("dtype, big", [(np.float32, 1e4), (np.float64, 1e300)])
def test_softmax_of_huge_logits(dtype, big):
    x = np.array([[big, -big, 0.0], [-big, -big, -big], [big, big, -big]], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = lib.softmax(x)
    assert w.dtype == dtype and np.isfinite(w).all()
    np.testing.assert_allclose(w, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0]], rtol=1e-6)


@pytest.mark.parametrize("dtype, big", [(np.float32, 1e4), (np.float64, 1e150)])
def test_attention_with_huge_scores_stays_finite(dtype, big):
    q = np.array([[1.0, 0.0], [0.0, -1.0]], dtype=dtype) * big
    k = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=dtype)
    v = np.arange(6, dtype=dtype).reshape(3, 2)
    out, w = lib.scaled_dot_product_attention(q, k, v, scale=1.0, return_weights=True)
    assert out.dtype == dtype and np.isfinite(out).all() and np.isfinite(w).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-6)


def test_minus_inf_in_an_additive_mask():
    q = k = v = np.eye(3, dtype=np.float32)
    mask = np.array([[0, -np.inf, 0], [-np.inf, -np.inf, -np.inf], [0, 0, 0]], dtype=np.float32)
    out, w = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    assert w.dtype == np.float32
    assert w[0, 1] == 0 and (w[1] == 0).all() and (out[1] == 0).all()
    assert np.isfinite(out).all()


def test_fully_masked_rows_get_zero_weights_and_zero_output():
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    mask = np.ones((4, 5), bool)
    mask[2] = False
    out, w = lib.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    assert (w[2] == 0).all() and (out[2] == 0).all()
    assert np.isfinite(out).all()


def test_causal_with_more_keys_than_queries_is_top_left_aligned():
    q = np.ones((2, 2))
    k = np.ones((4, 2))
    v = np.arange(8.0).reshape(4, 2)
    _, w = lib.scaled_dot_product_attention(q, k, v, is_causal=True, return_weights=True)
    np.testing.assert_array_equal(w, [[1, 0, 0, 0], [0.5, 0.5, 0, 0]])


def test_causal_with_more_queries_than_keys():
    _, w = lib.scaled_dot_product_attention(
        np.ones((3, 1)), np.ones((2, 1)), np.ones((2, 1)), is_causal=True, return_weights=True
    )
    np.testing.assert_array_equal(w, [[1, 0], [0.5, 0.5], [0.5, 0.5]])


def test_inputs_are_not_modified():
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    copies = [a.copy() for a in (q, k, v)]
    lib.scaled_dot_product_attention(q, k, v, is_causal=True)
    lib.softmax(q)
    for a, b in zip((q, k, v), copies):
        np.testing.assert_array_equal(a, b)


def test_float32_stays_float32_everywhere():
    x = np.ones((2, 3, 4), np.float32)
    w = np.eye(4, dtype=np.float32)
    assert lib.softmax(x).dtype == np.float32
    assert lib.dot_product_scores(x).dtype == np.float32
    assert all(a.dtype == np.float32 for a in lib.project_qkv(x, w, w, w))
    assert lib.multi_head_attention(x, w, w, w, w, n_heads=2).dtype == np.float32


def test_integer_input_is_computed_in_float64():
    out = lib.scaled_dot_product_attention([[1, 0]], [[1, 0], [0, 1]], [[2, 3], [4, 5]])
    assert out.dtype == np.float64
