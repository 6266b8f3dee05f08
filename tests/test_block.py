"""lib.block (LayerNorm, the feed-forward layer, a Transformer block) against the
plain-loop versions of tests/naive.py, and the block's properties: residual,
position-wise, causal, scale-invariant; and its errors on bad input."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import feed_forward_row, layer_norm_row, naive_block
from strategies import finite_arrays

from sdpa_course import lib


def as_lists(w: lib.BlockWeights) -> dict:
    return {f.name: getattr(w, f.name).tolist() for f in dataclasses.fields(w)}


def drawn_weights(d_model: int, d_ff: int, seed: int) -> lib.BlockWeights:
    """Weights with non-trivial LayerNorm gains and biases and non-zero biases."""
    rng = np.random.default_rng(seed)
    w = lib.random_block_weights(d_model, d_ff, seed=seed)
    return dataclasses.replace(
        w,
        b_1=rng.normal(scale=0.1, size=d_ff),
        b_2=rng.normal(scale=0.1, size=d_model),
        gain_1=rng.uniform(0.5, 1.5, size=d_model),
        bias_1=rng.normal(scale=0.1, size=d_model),
        gain_2=rng.uniform(0.5, 1.5, size=d_model),
        bias_2=rng.normal(scale=0.1, size=d_model),
    )


# --------------------------------------------------------------------------- LayerNorm


@settings(max_examples=40, deadline=None)
@given(x=finite_arrays((3, 5), bound=50.0), eps=st.sampled_from([1e-5, 1e-3, 0.5]))
def test_layer_norm_equals_plain_loops(x, eps):
    rng = np.random.default_rng(0)
    gain, bias = rng.normal(size=5), rng.normal(size=5)
    expected = [layer_norm_row(row, gain.tolist(), bias.tolist(), eps) for row in x.tolist()]
    np.testing.assert_allclose(lib.layer_norm(x, gain, bias, eps=eps), expected, rtol=1e-9, atol=1e-9)


def test_layer_norm_rows_have_mean_0_and_length_sqrt_d_model():
    for d_model in (4, 64, 512):
        x = np.random.default_rng(d_model).normal(loc=3.0, scale=7.0, size=(10, d_model))
        y = lib.layer_norm(x)
        np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-12)
        np.testing.assert_allclose(np.linalg.norm(y, axis=-1), math.sqrt(d_model), rtol=1e-6)


def test_layer_norm_ignores_the_scale_and_shift_of_a_row():
    x = np.random.default_rng(3).normal(size=(4, 16))
    # exact up to eps, which weighs 100 times less against the variance of 10 x
    np.testing.assert_allclose(lib.layer_norm(10 * x + 2, eps=1e-12), lib.layer_norm(x, eps=1e-12), atol=1e-9)
    np.testing.assert_allclose(lib.layer_norm(10 * x + 2), lib.layer_norm(x), atol=1e-4)


def test_layer_norm_broadcasts_over_leading_axes_and_keeps_float32():
    x = np.random.default_rng(4).normal(size=(2, 3, 5, 8)).astype(np.float32)
    y = lib.layer_norm(x, np.ones(8), np.zeros(8))
    assert y.shape == x.shape and y.dtype == np.float32
    np.testing.assert_allclose(y[1, 2], lib.layer_norm(x[1, 2].astype(np.float64)), atol=1e-5)


def test_a_constant_row_becomes_the_bias():
    np.testing.assert_allclose(lib.layer_norm(np.full((1, 4), 7.0), bias=[1, 2, 3, 4]), [[1, 2, 3, 4]])


# --------------------------------------------------------------------------- feed-forward


def test_feed_forward_equals_plain_loops_and_is_position_wise():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 6, 4))
    w_1, b_1, w_2, b_2 = rng.normal(size=(4, 16)), rng.normal(size=16), rng.normal(size=(16, 4)), rng.normal(size=4)
    got = lib.feed_forward(x, w_1, b_1, w_2, b_2)
    assert got.shape == (2, 6, 4)
    for b in range(2):
        for i in range(6):
            row = feed_forward_row(x[b, i].tolist(), w_1.tolist(), b_1.tolist(), w_2.tolist(), b_2.tolist())
            np.testing.assert_allclose(got[b, i], row, rtol=1e-10, atol=1e-10)
    # one token alone gives the same row: no token reads another
    np.testing.assert_allclose(lib.feed_forward(x[0, 3:4], w_1, b_1, w_2, b_2)[0], got[0, 3], atol=1e-12)


def test_feed_forward_hidden_width_can_differ_from_d_model():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(3, 5))
    out = lib.feed_forward(x, rng.normal(size=(5, 7)), np.zeros(7), rng.normal(size=(7, 5)), np.zeros(5))
    assert out.shape == (3, 5)


# --------------------------------------------------------------------------- the block


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_block_equals_plain_loops(norm, causal, n_heads):
    w = drawn_weights(8, 20, seed=n_heads)
    x = np.random.default_rng(10 + n_heads).normal(size=(5, 8))
    expected = naive_block(x.tolist(), as_lists(w), n_heads, norm=norm, causal=causal)
    got = lib.transformer_block(x, w, n_heads, norm=norm, is_causal=causal)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


def test_block_batches_over_leading_axes():
    w = drawn_weights(8, 12, seed=1)
    x = np.random.default_rng(2).normal(size=(3, 4, 8))
    got = lib.transformer_block(x, w, 2, is_causal=True)
    assert got.shape == (3, 4, 8)
    for b in range(3):
        np.testing.assert_allclose(got[b], naive_block(x[b].tolist(), as_lists(w), 2, causal=True), atol=1e-9)


def test_pre_ln_block_with_silent_sub_layers_is_the_identity():
    """The residual path: when W_O, W_2 and b_2 are 0 the sub-layers add nothing."""
    w = dataclasses.replace(drawn_weights(8, 16, seed=3), w_o=np.zeros((8, 8)), w_2=np.zeros((16, 8)), b_2=np.zeros(8))
    x = np.random.default_rng(4).normal(size=(6, 8))
    np.testing.assert_array_equal(lib.transformer_block(x, w, 2), x)
    # post-LN normalises even then: the output is LayerNorm applied twice, not x
    twice = [layer_norm_row(layer_norm_row(r, w.gain_1, w.bias_1), w.gain_2, w.bias_2) for r in x.tolist()]
    np.testing.assert_allclose(lib.transformer_block(x, w, 2, norm="post"), twice, atol=1e-9)


def test_pre_ln_output_is_input_plus_the_two_sub_layers():
    w = drawn_weights(8, 16, seed=5)
    x = np.random.default_rng(6).normal(size=(6, 8))
    no_ffn = dataclasses.replace(w, w_2=np.zeros((16, 8)), b_2=np.zeros(8))
    h = np.array(naive_block(x.tolist(), as_lists(no_ffn), 2))  # x + attention
    ffn = [feed_forward_row(layer_norm_row(r, w.gain_2, w.bias_2), w.w_1, w.b_1, w.w_2, w.b_2) for r in h.tolist()]
    np.testing.assert_allclose(lib.transformer_block(x, w, 2), h + np.array(ffn), atol=1e-9)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_causal_block_never_reads_the_future(norm):
    w = drawn_weights(8, 16, seed=7)
    x = np.random.default_rng(8).normal(size=(6, 8))
    changed = x.copy()
    changed[4:] = np.random.default_rng(9).normal(size=(2, 8))
    a = lib.transformer_block(x, w, 2, norm=norm, is_causal=True)
    b = lib.transformer_block(changed, w, 2, norm=norm, is_causal=True)
    np.testing.assert_array_equal(a[:4], b[:4])
    assert not np.allclose(a[4:], b[4:])
    # without the mask, changing the last tokens changes every row
    c = lib.transformer_block(x, w, 2, norm=norm)
    d = lib.transformer_block(changed, w, 2, norm=norm)
    assert not np.allclose(c[0], d[0])


def test_post_ln_rows_have_the_gain_and_bias_statistics():
    w = lib.random_block_weights(16, 64, seed=2)
    x = np.random.default_rng(3).normal(scale=5.0, size=(7, 16))
    out = lib.transformer_block(x, w, 4, norm="post")
    np.testing.assert_allclose(out.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 4.0, rtol=1e-5)


def test_random_block_weights_statistics():
    w = lib.random_block_weights(256, 1024, seed=0)
    assert w.w_1.shape == (256, 1024) and w.w_2.shape == (1024, 256)
    assert abs(w.w_1.std() - 1 / 16) < 0.002 and abs(w.w_2.std() - 1 / 32) < 0.001
    assert (w.gain_1 == 1).all() and (w.bias_2 == 0).all() and (w.b_1 == 0).all()


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: lib.layer_norm([[1.0, 2.0]], gain=[1.0, 2.0, 3.0]), ValueError, r"gain must have shape \(2,\)"),
        (lambda: lib.layer_norm([[1.0, 2.0]], bias=[[0.0, 0.0]]), ValueError, r"bias must have shape \(2,\)"),
        (lambda: lib.layer_norm([[1.0, np.nan]]), ValueError, "x must be finite"),
        (lambda: lib.layer_norm([["a", "b"]]), TypeError, "x must hold real numbers"),
        (lambda: lib.layer_norm([[1.0, 2.0]], eps=0), ValueError, "eps must be a positive"),
        (lambda: lib.layer_norm([[1.0, 2.0]], eps="small"), TypeError, "eps must be a real number"),
        (lambda: lib.layer_norm(np.zeros((2, 0))), ValueError, "at least one column"),
        (
            lambda: lib.feed_forward(np.zeros((3, 4)), np.zeros((5, 8)), np.zeros(8), np.zeros((8, 4)), np.zeros(4)),
            ValueError,
            r"w_1 must have shape \(4, d_ff\).*x has shape \(3, 4\).*w_1 has shape \(5, 8\)",
        ),
        (
            lambda: lib.feed_forward(np.zeros((3, 4)), np.zeros((4, 8)), np.zeros(7), np.zeros((8, 4)), np.zeros(4)),
            ValueError,
            r"b_1 must have shape \(8,\)",
        ),
        (
            lambda: lib.feed_forward(np.zeros((3, 4)), np.zeros((4, 8)), np.zeros(8), np.zeros((4, 8)), np.zeros(4)),
            ValueError,
            r"w_2 must have shape \(d_ff, d_model\) = \(8, 4\).*got shape \(4, 8\)",
        ),
        (
            lambda: lib.transformer_block(np.zeros((3, 6)), lib.random_block_weights(8, 16), 2),
            ValueError,
            r"weights.w_q must have shape \(d_model, d_model\) = \(6, 6\).*\(3, 6\).*got shape \(8, 8\)",
        ),
        (
            lambda: lib.transformer_block(np.zeros((3, 8)), lib.random_block_weights(8, 16), 3),
            ValueError,
            r"n_heads \(3\) must divide",
        ),
        (
            lambda: lib.transformer_block(np.zeros((3, 8)), {"w_q": np.zeros((8, 8))}, 2),
            TypeError,
            "weights must be a lib.BlockWeights; got dict",
        ),
        (
            lambda: lib.transformer_block(np.zeros((3, 8)), lib.random_block_weights(8, 16), 2, norm="Pre"),
            ValueError,
            "norm must be 'pre' or 'post'; got 'Pre'",
        ),
        (
            lambda: lib.transformer_block(np.zeros(8), lib.random_block_weights(8, 16), 2),
            ValueError,
            r"\(\.\.\., n, d_model\)",
        ),
        (lambda: lib.random_block_weights(8, 0), ValueError, "d_ff must be 1 or more"),
        (lambda: lib.random_block_weights(8.0, 16), TypeError, "d_model must be an integer"),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, words):
    with pytest.raises(error, match=words):
        call()
