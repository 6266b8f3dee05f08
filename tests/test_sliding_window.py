"""lib.sliding_window_mask: chapter 6's causal mask with only the last ``window`` keys permitted."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from naive_decoding import window_allowed

from sdpa_course import lib

shapes = st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(1, 10))


@given(shapes)
def test_matches_the_definition_j_at_most_i_and_fewer_than_window_back(shape):
    n_q, n_k, window = shape
    mask = lib.sliding_window_mask(n_q, n_k, window=window)
    assert mask.dtype == np.bool_ and mask.shape == (n_q, n_k)
    assert mask.tolist() == window_allowed(n_q, n_k, window)


@given(st.integers(0, 9), st.integers(0, 9))
def test_a_window_of_n_q_or_more_is_the_causal_mask_and_a_window_of_one_the_diagonal(n_q, n_k):
    wide = lib.sliding_window_mask(n_q, n_k, window=max(n_q, 1))
    assert np.array_equal(wide, lib.causal_mask(n_q, n_k))
    assert np.array_equal(lib.sliding_window_mask(n_q, n_k, window=1), np.eye(n_q, n_k, dtype=bool))


def test_attention_with_the_mask_gives_zero_weight_outside_the_band():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 7, 4))
    band = lib.sliding_window_mask(7, window=3)
    _, weights = lib.scaled_dot_product_attention(q, k, v, band, return_weights=True)
    assert (weights[~band] == 0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"window": 0}, ValueError, "window must be 1 or more; got 0"),
        ({"window": 2.0}, TypeError, "window must be an integer; got float 2.0"),
        ({"window": None}, TypeError, "window must be an integer"),
    ],
)
def test_a_bad_window_is_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        lib.sliding_window_mask(4, **kwargs)
