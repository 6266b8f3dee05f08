"""Multi-head attention against a hand-written per-head loop."""

import numpy as np
import pytest
from naive import naive_attention

from sdpa_course import lib


@pytest.mark.parametrize("n_heads", [1, 2, 4])
@pytest.mark.parametrize("cross", [False, True])
def test_multi_head_equals_a_loop_over_heads(n_heads, cross):
    rng = np.random.default_rng(n_heads)
    d_model, n_q = 8, 5
    x = rng.normal(size=(n_q, d_model))
    x_kv = rng.normal(size=(3, d_model)) if cross else x
    w_q, w_k, w_v = (rng.normal(size=(d_model, d_model)) for _ in range(3))
    w_o = rng.normal(size=(d_model, 6))
    d_head = d_model // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        out, _ = naive_attention(
            (x @ w_q[:, cols]).tolist(), (x_kv @ w_k[:, cols]).tolist(), (x_kv @ w_v[:, cols]).tolist()
        )
        heads.append(np.array(out))
    expected = np.concatenate(heads, axis=1) @ w_o
    got = lib.multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads, x_kv=None if not cross else x_kv)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_weights_per_head_have_the_documented_shape():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 8))
    w = [rng.normal(size=(8, 8)) for _ in range(4)]
    out, weights = lib.multi_head_attention(x, *w, n_heads=4, is_causal=True, return_weights=True)
    assert out.shape == (2, 5, 8) and weights.shape == (2, 4, 5, 5)
    assert (np.triu(weights[0, 0], 1) == 0).all()
