"""The reference attention's strips of whole rows (lib.tiles.choose_strip).

The reference computes its scores one strip of rows at a time; with a small
cache budget every case below spans several strips, ragged ones included, and
must still equal plain loops (tests/naive.py), weights and outputs alike.
"""

from __future__ import annotations

import numpy as np
import pytest

import lib
import lib.attention
import lib.tiles
from tests.naive import naive_attention


@pytest.fixture
def small_strips(monkeypatch):
    """Strips of at most MIN_SIDE rows: the budget holds barely one row."""
    real = lib.tiles.choose_strip

    def tiny(n_q, n_k, d_k, d_v, itemsize, heads=1, budget_bytes=None):
        return real(n_q, n_k, d_k, d_v, itemsize, heads=heads, budget_bytes=1)

    monkeypatch.setattr(lib.attention, "choose_strip", tiny)
    assert tiny(50, 40, 8, 4, 8).rows <= lib.tiles.MIN_SIDE < 50


@pytest.mark.usefixtures("small_strips")
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
@pytest.mark.parametrize("big", [False, True])  # big: scores too large for the shift-free path
def test_several_strips_equal_plain_loops(mask_kind, big):
    rng = np.random.default_rng(5)
    n_q, n_k, d = 50, 40, 8
    size = 30.0 if big else 1.0
    q, k = (rng.standard_normal((n, d)) * size for n in (n_q, n_k))
    v = rng.standard_normal((n_k, 3))
    allowed = np.ones((n_q, n_k), dtype=bool)
    mask, added, causal = None, None, mask_kind == "causal"
    if mask_kind == "bool":
        mask = allowed = rng.random((n_q, n_k)) < 0.6
        mask[7] = False  # a query with no permitted key
    elif mask_kind == "float":
        mask = rng.standard_normal((n_q, n_k))
        mask[rng.random((n_q, n_k)) < 0.3] = -np.inf
        added = mask.tolist()
    elif causal:
        allowed = np.tri(n_q, n_k, dtype=bool)
    out, w = lib.scaled_dot_product_attention(q, k, v, mask, is_causal=causal, return_weights=True)
    want_out, want_w = naive_attention(q.tolist(), k.tolist(), v.tolist(), allowed=allowed.tolist(), added=added)
    np.testing.assert_allclose(w, want_w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out, want_out, rtol=1e-9, atol=1e-12)
    alone = lib.scaled_dot_product_attention(q, k, v, mask, is_causal=causal)
    np.testing.assert_array_equal(alone, out)  # asking for the weights does not change the output


def test_a_strip_fits_the_budget():
    for n_k, budget in ((1024, 2**19), (1024, 2**20), (4096, 2**21), (100, 2**20)):
        strip = lib.tiles.choose_strip(1024, n_k, 64, 64, 4, heads=16, budget_bytes=budget)
        assert strip.cols == n_k
        assert strip.heads * strip.rows * (n_k + 128) * 4 <= budget
        # Not needlessly small: one more row per head would break the budget, or the rows are all of n_q
        # cut into equal blocks.
        blocks = -(-1024 // strip.rows)
        assert blocks == 1 or (1024 // (blocks - 1) + 1) * (n_k + 128) * 4 > budget
