"""lib.rotate (rotary position embeddings), lib.rotary_frequencies and lib.sinusoidal_positions."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from naive_decoding import rotate_row, sinusoid
from strategies import FLOAT_DTYPES, finite_arrays

from sdpa_course import lib

widths = st.integers(1, 4).map(lambda pairs: 2 * pairs)
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


@st.composite
def rows_and_positions(draw):
    dtype = draw(st.sampled_from(FLOAT_DTYPES))
    n, d = draw(st.integers(1, 6)), draw(widths)
    x = draw(finite_arrays((n, d), dtype))
    positions = draw(st.lists(st.integers(-50, 3000), min_size=n, max_size=n))
    return x, positions


@given(rows_and_positions())
def test_each_row_is_turned_by_its_position_as_plain_cos_and_sin_give(case):
    x, positions = case
    turned = lib.rotate(x, positions)
    assert turned.dtype == x.dtype and turned.shape == x.shape
    expected = [rotate_row(row, p) for row, p in zip(x.astype(float).tolist(), positions)]
    tol = TOL[x.dtype] * (1 + np.abs(x).max())
    np.testing.assert_allclose(turned, expected, rtol=0, atol=tol)


@given(rows_and_positions())
def test_lengths_are_kept_and_turning_back_gives_the_rows_again(case):
    x, positions = case
    x = x.astype(np.float64)
    turned = lib.rotate(x, positions)
    np.testing.assert_allclose(np.linalg.norm(turned, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lib.rotate(turned, [-p for p in positions]), x, rtol=0, atol=1e-11)


@given(widths, st.integers(0, 2000), st.integers(0, 2000), st.integers(-500, 500), st.data())
def test_the_score_depends_on_the_positions_only_through_their_offset(d, i, j, shift, data):
    q, k = (data.draw(finite_arrays((1, d), np.float64)) for _ in range(2))
    score = (lib.rotate(q, [i]) @ lib.rotate(k, [j]).T).item()
    shifted = (lib.rotate(q, [i + shift]) @ lib.rotate(k, [j + shift]).T).item()
    # The angles are rounded one by one; positions up to 2500 lose about 2500 eps of them.
    assert shifted == pytest.approx(score, abs=1e-11 * (1 + np.abs(q).max() * np.abs(k).max() * d))


def test_position_zero_turns_nothing_and_the_default_positions_count_from_zero():
    x = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(lib.rotate(x[:1]), x[:1])
    assert np.array_equal(lib.rotate(x), lib.rotate(x, [0, 1, 2]))
    assert np.array_equal(lib.rotate(np.stack([x, x])), lib.rotate(np.stack([x, x]), np.arange(3)))


def test_frequencies_and_the_sinusoid_are_those_of_the_paper():
    d = 8
    np.testing.assert_allclose(lib.rotary_frequencies(d), [10000 ** (-2 * r / d) for r in range(d // 2)], rtol=1e-15)
    np.testing.assert_allclose(lib.sinusoidal_positions(7, d), sinusoid(7, d), rtol=0, atol=1e-15)
    assert lib.sinusoidal_positions(0, 4).shape == (0, 4)


def test_the_dot_product_of_two_sinusoid_rows_depends_only_on_their_offset():
    p = lib.sinusoidal_positions(40, 16)
    gram = p @ p.T
    for offset in range(-30, 31):
        expected = sum(math.cos(offset / 10000 ** (2 * r / 16)) for r in range(8))
        np.testing.assert_allclose(np.diagonal(gram, offset), expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: lib.rotate(np.ones((2, 3))), ValueError, ["must be even", "(2, 3)"]),
        (lambda: lib.rotate(np.ones(4)), ValueError, ["x must have shape (..., n, d)", "got shape (4,)"]),
        (lambda: lib.rotate(np.ones((2, 4)), [0.5, 1.0]), TypeError, ["positions must be integers", "float64"]),
        (lambda: lib.rotate(np.ones((2, 4)), [True, False]), TypeError, ["positions must be integers", "bool"]),
        (lambda: lib.rotate(np.ones((2, 4)), [0, 1, 2]), ValueError, ["positions of shape (3,)", "(2,)"]),
        (lambda: lib.rotate(np.ones((2, 4)), base=1.0), ValueError, ["base must be a finite number above 1"]),
        (lambda: lib.rotate(np.ones((2, 4)), base="e"), TypeError, ["base must be a real number"]),
        (lambda: lib.rotary_frequencies(5), ValueError, ["d must be even", "got 5"]),
        (lambda: lib.sinusoidal_positions(3, 0), ValueError, ["d must be 2 or more"]),
        (lambda: lib.rotate(np.full((1, 2), np.nan)), ValueError, ["x must be finite"]),
    ],
)
def test_bad_input_is_named(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value)
