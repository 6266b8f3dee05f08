"""Hypothesis strategies shared by every test module (one home for them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOAT_DTYPES = (np.float32, np.float64)

sizes = st.integers(min_value=1, max_value=6)
batch_shapes = st.sampled_from([(), (2,), (3, 2), (1, 2)])


def finite_arrays(shape, dtype=np.float64, bound: float = 4.0):
    """Arrays of moderate finite values (no overflow in q.k for these sizes)."""
    return hnp.arrays(
        dtype,
        shape,
        elements=st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=32),
    )


@dataclass
class AttentionCase:
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray

    @property
    def n_q(self) -> int:
        return self.q.shape[-2]

    @property
    def n_k(self) -> int:
        return self.k.shape[-2]


@st.composite
def attention_cases(draw, dtype=None, batch=None, square: bool = False) -> AttentionCase:
    """q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v) of one dtype."""
    dtype = draw(st.sampled_from(FLOAT_DTYPES)) if dtype is None else dtype
    lead = draw(batch_shapes) if batch is None else batch
    n_q, n_k, d_k, d_v = draw(sizes), draw(sizes), draw(sizes), draw(sizes)
    if square:
        n_k = n_q
    return AttentionCase(
        q=draw(finite_arrays((*lead, n_q, d_k), dtype)),
        k=draw(finite_arrays((*lead, n_k, d_k), dtype)),
        v=draw(finite_arrays((*lead, n_k, d_v), dtype)),
    )


def bool_masks(shape):
    return hnp.arrays(np.bool_, shape)


logit_rows = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 4), st.integers(1, 6)),
    elements=st.floats(-50, 50, allow_nan=False, allow_infinity=False),
)


# ---------------------------------------------------------------- homework grading

#: Seeds of the hidden homework inputs (31 bits, as grading.seeds makes them).
grading_seeds = st.integers(min_value=0, max_value=2**31 - 1)


@st.composite
def extreme_logits(draw, dtype=None, neg_inf: bool = True) -> np.ndarray:
    """Logits of shape (..., n) as a softmax meets them: tiny to 1e4 in size, offsets
    of +-1e4 and 700 (beyond float64's exp), -inf entries and whole rows of -inf."""
    dtype = draw(st.sampled_from(FLOAT_DTYPES)) if dtype is None else dtype
    lead = draw(batch_shapes)
    n = draw(st.integers(1, 8))
    unit = draw(hnp.arrays(np.float64, (*lead, n), elements=st.floats(-1, 1, allow_nan=False)))
    scale = draw(st.sampled_from([1e-3, 1.0, 30.0, 1e3, 1e4]))
    offset = draw(st.sampled_from([0.0, 1e4, -1e4, 700.0, -700.0]))
    z = unit * scale + offset
    if neg_inf and draw(st.booleans()):
        z[draw(hnp.arrays(np.bool_, z.shape))] = -np.inf
    return z.astype(dtype)


# ---------------------------------------------------------------- decoding (chapter 12)


@dataclass
class GroupedCase:
    """Queries of h heads and keys and values of h_kv heads (h_kv divides h)."""

    q: np.ndarray  # (..., h, n_q, d_k)
    k: np.ndarray  # (..., h_kv, n_k, d_k)
    v: np.ndarray  # (..., h_kv, n_k, d_v)


@st.composite
def grouped_cases(draw, dtype=None) -> GroupedCase:
    dtype = draw(st.sampled_from(FLOAT_DTYPES)) if dtype is None else dtype
    lead = draw(st.sampled_from([(), (2,)]))
    h_kv = draw(st.integers(1, 3))
    h = h_kv * draw(st.integers(1, 3))
    n_q, n_k, d_k, d_v = draw(sizes), draw(sizes), draw(sizes), draw(sizes)
    return GroupedCase(
        q=draw(finite_arrays((*lead, h, n_q, d_k), dtype)),
        k=draw(finite_arrays((*lead, h_kv, n_k, d_k), dtype)),
        v=draw(finite_arrays((*lead, h_kv, n_k, d_v), dtype)),
    )


@dataclass
class DecoderCase:
    """Token vectors and the three projections of a decoder layer with grouped heads."""

    x: np.ndarray  # (n, d_model)
    w_q: np.ndarray  # (d_model, h * d_k)
    w_k: np.ndarray  # (d_model, h_kv * d_k)
    w_v: np.ndarray  # (d_model, h_kv * d_v)
    n_heads: int
    n_kv_heads: int


@st.composite
def decoder_cases(draw, dtype=np.float64) -> DecoderCase:
    """A decoder layer of 1 to 7 tokens; d_k is even, so rotary embeddings apply."""
    h_kv = draw(st.integers(1, 2))
    h = h_kv * draw(st.integers(1, 2))
    d_k, d_v = 2 * draw(st.integers(1, 2)), draw(st.integers(1, 3))
    n, d_model = draw(st.integers(1, 7)), draw(st.integers(1, 5))
    weights = st.floats(-1, 1, allow_nan=False, width=32)
    return DecoderCase(
        x=draw(finite_arrays((n, d_model), dtype, bound=2.0)),
        w_q=draw(hnp.arrays(dtype, (d_model, h * d_k), elements=weights)),
        w_k=draw(hnp.arrays(dtype, (d_model, h_kv * d_k), elements=weights)),
        w_v=draw(hnp.arrays(dtype, (d_model, h_kv * d_v), elements=weights)),
        n_heads=h,
        n_kv_heads=h_kv,
    )
