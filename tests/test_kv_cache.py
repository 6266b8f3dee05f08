"""lib.KVCache, lib.kv_cache_bytes, and decoding one token at a time against the full computation."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from naive_decoding import decoder_heads
from strategies import decoder_cases

from sdpa_course import lib

windows = st.one_of(st.none(), st.integers(1, 4))


@given(
    st.integers(1, 100), st.integers(1, 128), st.integers(1, 256), st.sampled_from([1, 2, 4, 8]), st.integers(0, 10**6)
)
def test_cache_bytes_count_a_key_and_a_value_per_head_per_layer_per_token(layers, heads, d_head, size, tokens):
    expected = 2 * layers * heads * d_head * size * tokens
    assert lib.kv_cache_bytes(layers, heads, d_head, size, n_tokens=tokens) == expected
    assert isinstance(lib.kv_cache_bytes(layers, heads, d_head, size), int)


def test_cache_bytes_of_llama_7b_and_gpt3_in_16_bit_numbers():
    # 32 layers of 32 heads of 128 (LLaMA 7B), 96 of 96 of 128 (GPT-3 175B); 2 bytes a number.
    assert lib.kv_cache_bytes(32, 32, 128, 2) == 512 * 1024
    assert lib.kv_cache_bytes(32, 32, 128, 2, n_tokens=2048) == 1024**3
    assert lib.kv_cache_bytes(96, 96, 128, 2) == 4.5 * 1024**2


@given(decoder_cases(), st.booleans(), windows)
def test_decoding_token_by_token_gives_the_full_computation_up_to_rounding(case, rotary, window):
    args = (case.x, case.w_q, case.w_k, case.w_v)
    options = dict(n_heads=case.n_heads, n_kv_heads=case.n_kv_heads, rotary=rotary, window=window)
    full = lib.decoder_attention(*args, **options)
    step_by_step = lib.decode_with_cache(*args, **options)
    assert step_by_step.shape == full.shape == (case.n_heads, len(case.x), case.w_v.shape[1] // case.n_kv_heads)
    np.testing.assert_allclose(step_by_step, full, rtol=1e-12, atol=1e-12 * (1 + np.abs(full).max()))


@given(decoder_cases(), st.booleans(), windows)
def test_the_full_computation_matches_plain_python(case, rotary, window):
    options = dict(n_heads=case.n_heads, n_kv_heads=case.n_kv_heads, rotary=rotary, window=window)
    got = lib.decoder_attention(case.x, case.w_q, case.w_k, case.w_v, **options)
    expected = decoder_heads(*(a.tolist() for a in (case.x, case.w_q, case.w_k, case.w_v)), **options)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_float32_decoding_stays_float32_and_close():
    rng = np.random.default_rng(4)
    x, w_q = rng.normal(size=(9, 8)).astype(np.float32), rng.normal(size=(8, 8)).astype(np.float32) / 3
    w_k, w_v = (rng.normal(size=(8, 4)).astype(np.float32) / 3 for _ in range(2))
    options = dict(n_heads=4, n_kv_heads=2, rotary=True, window=3)
    full, cached = (
        lib.decoder_attention(x, w_q, w_k, w_v, **options),
        lib.decode_with_cache(x, w_q, w_k, w_v, **options),
    )
    assert full.dtype == cached.dtype == np.float32
    np.testing.assert_allclose(cached, full, rtol=1e-5, atol=1e-5)


def test_keys_turned_at_the_querys_position_lose_the_positions():
    """The named mistake of chapter 12: the turns cancel, q_i R_i (k_j R_i)^T = q_i k_j^T."""
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(3, 2, 6, 4))
    wrong = np.concatenate(
        [
            lib.scaled_dot_product_attention(
                lib.rotate(q[:, i : i + 1], [i]), lib.rotate(k[:, : i + 1], [i] * (i + 1)), v[:, : i + 1]
            )
            for i in range(6)
        ],
        axis=-2,
    )
    np.testing.assert_allclose(wrong, lib.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-12, atol=1e-12)
    right = lib.scaled_dot_product_attention(lib.rotate(q), lib.rotate(k), v, is_causal=True)
    assert np.abs(wrong - right).max() > 1e-3


def test_the_cache_appends_positions_and_a_window_drops_the_oldest():
    cache = lib.KVCache()
    assert len(cache) == 0 and cache.nbytes == 0 and cache.positions.tolist() == []
    for i in range(4):
        cache.append(np.full((2, 1, 3), float(i)), np.full((2, 1, 5), -float(i)))
    assert len(cache) == 4 and cache.keys.shape == (2, 4, 3) and cache.values.shape == (2, 4, 5)
    assert cache.keys[0, :, 0].tolist() == [0.0, 1.0, 2.0, 3.0] and cache.nbytes == (2 * 4 * 3 + 2 * 4 * 5) * 8
    rolling = lib.KVCache(window=3)
    for i in range(5):
        rolling.append(np.full((1, 1, 2), float(i)), np.full((1, 1, 2), float(i)))
        assert len(rolling) == min(i + 1, 3)
    assert rolling.positions.tolist() == [2, 3, 4] and rolling.keys[0, :, 0].tolist() == [2.0, 3.0, 4.0]
    assert rolling.seen == 5
    several = lib.KVCache(window=2)
    several.append(np.zeros((1, 3, 2)), np.zeros((1, 3, 2)))  # three positions at once (a prompt)
    assert several.positions.tolist() == [1, 2]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda c: c.keys, ValueError, ["the cache is empty"]),
        (lambda c: c.append(np.ones((1, 1, 2)), np.ones((1, 2, 2))), ValueError, ["same heads and positions"]),
        (lambda c: c.append(np.ones((1, 2)), np.ones((1, 2))), ValueError, ["k must have shape (..., h_kv, m, d_k)"]),
    ],
)
def test_bad_use_of_an_empty_cache_is_named(call, error, words):
    with pytest.raises(error) as info:
        call(lib.KVCache())
    for word in words:
        assert word in str(info.value)


def test_a_key_of_another_width_or_head_count_does_not_fit_the_cache():
    cache = lib.KVCache()
    cache.append(np.ones((2, 1, 4)), np.ones((2, 1, 4)))
    with pytest.raises(
        ValueError, match=r"k of shape \(2, 1, 3\) does not fit the cache, which holds shape \(2, 1, 4\)"
    ):
        cache.append(np.ones((2, 1, 3)), np.ones((2, 1, 4)))
    with pytest.raises(ValueError, match=r"k of shape \(3, 1, 4\) does not fit"):
        cache.append(np.ones((3, 1, 4)), np.ones((3, 1, 4)))
    with pytest.raises(ValueError, match="window must be 1 or more"):
        lib.KVCache(window=0)


@pytest.mark.parametrize(
    "shapes, kwargs, words",
    [
        (((5, 8), (8, 8), (8, 4), (8, 4)), {"n_heads": 4, "n_kv_heads": 3}, ["n_kv_heads (3) must divide n_heads (4)"]),
        (((5, 8), (8, 6), (8, 4), (8, 4)), {"n_heads": 4}, ["n_heads (4) must divide the width of w_q", "(8, 6)"]),
        (
            ((5, 8), (8, 8), (8, 4), (8, 4)),
            {"n_heads": 4},
            ["w_k must have shape (d_model, n_kv_heads * d_k) = (8, 8)"],
        ),
        (((5, 8), (7, 8), (8, 8), (8, 8)), {"n_heads": 4}, ["w_q must have shape (8, width)", "(7, 8)"]),
        (((5, 8), (8, 8), (8, 4), (8, 3)), {"n_heads": 4, "n_kv_heads": 2}, ["must divide the width of w_v"]),
    ],
)
def test_bad_projections_are_named(shapes, kwargs, words):
    arrays = [np.ones(s) for s in shapes]
    for function in (lib.decoder_attention, lib.decode_with_cache):
        with pytest.raises(ValueError) as info:
            function(*arrays, **kwargs)
        for word in words:
            assert word in str(info.value)


def test_rotary_embeddings_need_an_even_head_width():
    x, w = np.ones((3, 4)), np.ones((4, 6))
    with pytest.raises(ValueError, match="must be even"):
        lib.decoder_attention(x, w, w, w, n_heads=2, rotary=True)
