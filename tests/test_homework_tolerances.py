"""Correct means full marks: independent correct implementations pass every check.

The tolerances of ``grading`` are derived from the float
error of numerically sound methods (``grading.authoring.logit_rtol`` and
``row_sum_tol`` say how), not from lib's own rounding. Here several correct
implementations of every graded function, written for these tests (not copied
from ``solutions/``) and each sound in its own way (shift by the maximum,
log-sum-exp, float64 inside, loops, einsum, scaling q and k separately), are
graded on many random hidden inputs (Hypothesis draws the seeds), and the
softmax judges also on logits that Hypothesis draws directly (extreme sizes,
float32, batches, -inf). Every one must earn full marks.

Examples are derandomized (the same every run) so CI is stable; homework 5's
statistical checks are left out here (their false-failure rate is derived in
``sdpa_course/grading/hw5.py`` and tested in ``test_homework_grading.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import extreme_logits, grading_seeds

from sdpa_course import grading
from sdpa_course.grading.compare import Verdict
from sdpa_course.grading.plain import make_case
from sdpa_course.grading.run import run_cases

# ---------------------------------------------------------------- softmax, several ways


def softmax_shift(z):
    """Shift by the row maximum, in the input's dtype."""
    top = np.max(z, axis=-1, keepdims=True)
    e = np.exp(z - np.where(np.isneginf(top), 0, top))
    s = e.sum(axis=-1, keepdims=True)
    return e / np.where(s > 0, s, 1)


def softmax_logsumexp(z):
    """exp(z - logsumexp(z)), in the input's dtype."""
    top = np.max(z, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        lse = top + np.log(np.exp(z - top).sum(axis=-1, keepdims=True))
    return np.exp(np.where(np.isneginf(lse), -np.inf, z - lse))


def softmax_float64(z):
    """In float64, rounded to the input's dtype once at the end."""
    return softmax_shift(z.astype(np.float64)).astype(z.dtype)


def softmax_loop(z):
    """One row at a time with Python's math (float64)."""
    out = np.zeros(z.shape, dtype=np.float64)
    for idx in np.ndindex(z.shape[:-1]):
        row = [float(t) for t in z[idx]]
        top = max(row)
        if top == -math.inf:
            continue
        e = [math.exp(t - top) for t in row]
        total = math.fsum(e)
        out[idx] = [t / total for t in e]
    return out.astype(z.dtype)


SOFTMAXES = [softmax_shift, softmax_logsumexp, softmax_float64, softmax_loop]


# ---------------------------------------------------------------- the graded functions, several ways


def _attention(q, k, v, mask=None, softmax=softmax_shift, split_scale=False):
    d_k = q.shape[-1]
    if split_scale:  # q and k each scaled by d_k ** -1/4
        c = np.asarray(d_k**-0.25, dtype=q.dtype)
        s = np.einsum("...id,...jd->...ij", q * c, k * c)
    else:
        s = q @ np.swapaxes(k, -1, -2) / np.asarray(math.sqrt(d_k), dtype=q.dtype)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = softmax(s)
    return w @ v, w


def _attention64(q, k, v, mask=None):
    o, w = _attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), mask)
    return o.astype(q.dtype), w.astype(q.dtype)


def _one_query(attn):
    def attend_one_query(q_i, k, v):
        o, w = attn(q_i[None, :], k, v)
        return o[0], w[0]

    return attend_one_query


def _split(x, h):
    d = x.shape[-1] // h
    return np.stack([x[..., m * d : (m + 1) * d] for m in range(h)], axis=-3)


def _merge(x):
    *lead, h, n, d = x.shape
    return np.moveaxis(x, -3, -2).reshape(*lead, n, h * d)


def _mha(attn):
    def multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads):
        heads, _ = attn(_split(x @ w_q, n_heads), _split(x @ w_k, n_heads), _split(x @ w_v, n_heads))
        return _merge(heads) @ w_o

    return multi_head_attention


def _mha_per_head(x, w_q, w_k, w_v, w_o, n_heads):
    d_k, d_v = w_q.shape[1] // n_heads, w_v.shape[1] // n_heads
    out = np.zeros(x.shape[:-1] + (w_o.shape[1],), dtype=np.float64)
    x64 = x.astype(np.float64)
    for m in range(n_heads):
        q, k = x64 @ w_q[:, m * d_k : (m + 1) * d_k], x64 @ w_k[:, m * d_k : (m + 1) * d_k]
        head, _ = _attention(q, k, x64 @ w_v[:, m * d_v : (m + 1) * d_v])
        out += head @ w_o[m * d_v : (m + 1) * d_v]
    return out.astype(x.dtype)


def _running_lse(x, size):
    """Running (m, l) kept as a log-sum-exp per row, in float64."""
    states, lse = [], np.full(x.shape[:-1], -np.inf)
    for start in range(0, x.shape[-1], size):
        block = x[..., start : start + size].astype(np.float64)
        lse = np.logaddexp(lse, np.logaddexp.reduce(block, axis=-1))
        m = np.max(x[..., : start + size], axis=-1)
        with np.errstate(invalid="ignore"):
            l = np.where(np.isneginf(m), 0.0, np.exp(lse - np.where(np.isneginf(m), 0, m)))
        states.append((m, l.astype(x.dtype)))
    return states


def _running_shift(x, size):
    m = np.full(x.shape[:-1], -np.inf, dtype=x.dtype)
    l = np.zeros(x.shape[:-1], dtype=x.dtype)
    out = []
    for start in range(0, x.shape[-1], size):
        b = x[..., start : start + size]
        m_new = np.maximum(m, b.max(axis=-1))
        c = np.where(np.isneginf(m_new), 0, m_new)
        l = l * np.exp(np.where(np.isneginf(m), -np.inf, m - c)) + np.exp(b - c[..., None]).sum(axis=-1)
        m = m_new
        out.append((m, l))
    return out


def _online(running, softmax_from_state):
    def online_softmax(x, size):
        m, l = running(x, size)[-1]
        return softmax_from_state(x, np.asarray(m)[..., None], np.asarray(l)[..., None])

    return online_softmax


def _from_state_divide(x, m, l):
    with np.errstate(invalid="ignore"):
        e = np.exp(x - np.where(np.isneginf(m), 0, m))
    return np.where(l > 0, e / np.where(l > 0, l, 1), 0).astype(x.dtype)


def _from_state_log(x, m, l):
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = np.where(l > 0, np.where(np.isneginf(m), 0, m) + np.log(np.where(l > 0, l, 1)), -np.inf)
        return np.exp(np.where(np.isneginf(lse), -np.inf, x - lse)).astype(x.dtype)


def _blocked(dtype64: bool):
    def blocked_attention(q, blocks):
        work = np.float64 if dtype64 else q.dtype
        qq = q.astype(work)
        m = np.full(q.shape[0], -np.inf, dtype=work)
        l = np.zeros(q.shape[0], dtype=work)
        acc = np.zeros((q.shape[0], blocks[0][1].shape[1]), dtype=work)
        for k_b, v_b, a_b in blocks:
            s = np.where(a_b, qq @ k_b.astype(work).T / np.asarray(math.sqrt(q.shape[1]), dtype=work), -np.inf)
            m_new = np.maximum(m, s.max(axis=1, initial=-np.inf))
            c = np.where(np.isneginf(m_new), 0, m_new)
            r = np.exp(np.where(np.isneginf(m), -np.inf, m - c))
            p = np.exp(s - c[:, None])
            l, acc, m = l * r + p.sum(axis=1), acc * r[:, None] + p @ v_b.astype(work), m_new
        return (acc / np.where(l > 0, l, 1)[:, None]).astype(q.dtype)

    return blocked_attention


def _blocked_per_query(q, blocks):
    """One query and one key at a time, in Python floats."""
    out = np.zeros((q.shape[0], blocks[0][1].shape[1]))
    for i in range(q.shape[0]):
        m, l, acc = -math.inf, 0.0, np.zeros(out.shape[1])
        for k_b, v_b, a_b in blocks:
            for j in range(k_b.shape[0]):
                if a_b[i, j]:
                    s = float(q[i].astype(np.float64) @ k_b[j].astype(np.float64)) / math.sqrt(q.shape[1])
                    m_new = max(m, s)
                    r = math.exp(m - m_new) if m > -math.inf else 0.0
                    p = math.exp(s - m_new)
                    l, acc, m = l * r + p, acc * r + p * v_b[j], m_new
        out[i] = acc / l if l > 0 else 0.0
    return out.astype(q.dtype)


def _scores_loop(x):
    n = x.shape[0]
    return (
        np.array([[math.fsum(float(a) * float(b) for a, b in zip(x[i], x[j])) for j in range(n)] for i in range(n)])
        .reshape(n, n)
        .astype(x.dtype)
    )


def _causal(n_q, n_k):
    return np.tri(n_q, n_k, dtype=bool)


def _softmax_backward_expanded(a, g):
    """a * g - a * (a . g): the product expanded, the row sum as an einsum."""
    return a * g - a * np.einsum("...j,...j->...", a, g)[..., None]


def _softmax_backward_jacobian64(a, g):
    """The Jacobian diag(a) - a a^T of every row, in float64, applied to g; rounded once at the end."""
    a64, g64 = a.astype(np.float64), g.astype(np.float64)
    jac = a64[..., :, None] * np.eye(a.shape[-1]) - a64[..., :, None] * a64[..., None, :]
    return np.einsum("...ij,...j->...i", jac, g64).astype(np.result_type(a, g))


def _softmax_backward_loop(a, g):
    """One row at a time with Python floats and math.fsum."""
    out = np.zeros(a.shape, dtype=np.float64)
    for idx in np.ndindex(a.shape[:-1]):
        row_a, row_g = [float(t) for t in a[idx]], [float(t) for t in g[idx]]
        dot = math.fsum(x * y for x, y in zip(row_a, row_g))
        out[idx] = [x * (y - dot) for x, y in zip(row_a, row_g)]
    return out.astype(np.result_type(a, g))


def _attention_backward(softmax=softmax_shift, backward=_softmax_backward_expanded, split_scale=False):
    """The backward pass from the forward weights of :func:`_attention` (in the inputs' dtype)."""

    def attention_backward(q, k, v, grad_out, mask=None):
        _, a = _attention(q, k, v, mask, softmax=softmax, split_scale=split_scale)
        d_k = q.shape[-1]
        dv = np.einsum("...ij,...ie->...je", a, grad_out)
        ds = backward(a, np.einsum("...ie,...je->...ij", grad_out, v))
        if split_scale:  # S = (c q)(c k)^T with c = d_k ** -1/4: each gradient gets c twice
            c = np.asarray(d_k**-0.25, dtype=q.dtype)
            return (ds @ (k * c)) * c, (np.swapaxes(ds, -1, -2) @ (q * c)) * c, dv
        ds = ds / np.asarray(math.sqrt(d_k), dtype=q.dtype)
        return np.einsum("...ij,...jd->...id", ds, k), np.einsum("...ij,...id->...jd", ds, q), dv

    return attention_backward


def _attention_backward64(q, k, v, grad_out, mask=None):
    """Everything in float64 (log-sum-exp softmax, the Jacobian), rounded once at the end."""
    dq, dk, dv = _attention_backward(softmax_logsumexp, _softmax_backward_jacobian64)(
        *(x.astype(np.float64) for x in (q, k, v, grad_out)), mask
    )
    return dq.astype(q.dtype), dk.astype(k.dtype), dv.astype(v.dtype)


def _attention_backward_loops(q, k, v, grad_out, mask=None):
    """One query and one key at a time, in Python floats (batch dimensions flattened)."""
    lead, (n_q, d_k), (n_k, d_v) = q.shape[:-2], q.shape[-2:], v.shape[-2:]
    Q, K = q.reshape(-1, n_q, d_k).astype(np.float64), k.reshape(-1, n_k, d_k).astype(np.float64)
    V, G = v.reshape(-1, n_k, d_v).astype(np.float64), grad_out.reshape(-1, n_q, d_v).astype(np.float64)
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    allowed = np.ones((n_q, n_k), bool) if mask is None else np.broadcast_to(mask, (n_q, n_k))
    for b in range(Q.shape[0]):
        for i in range(n_q):
            keys = [j for j in range(n_k) if allowed[i, j]]
            if not keys:
                continue  # no permitted key: weights 0, no gradient
            s = {j: math.fsum(Q[b, i] * K[b, j]) / math.sqrt(d_k) for j in keys}
            top = max(s.values())
            e = {j: math.exp(s[j] - top) for j in keys}
            total = math.fsum(e.values())
            a = {j: e[j] / total for j in keys}
            da = {j: math.fsum(G[b, i] * V[b, j]) for j in keys}
            dot = math.fsum(a[j] * da[j] for j in keys)
            for j in keys:
                ds = a[j] * (da[j] - dot) / math.sqrt(d_k)
                dQ[b, i] += ds * K[b, j]
                dK[b, j] += ds * Q[b, i]
                dV[b, j] += a[j] * G[b, i]
    return (
        dQ.reshape(*lead, n_q, d_k).astype(q.dtype),
        dK.reshape(*lead, n_k, d_k).astype(k.dtype),
        dV.reshape(*lead, n_k, d_v).astype(v.dtype),
    )


def _ln_two_pass(x, gain, bias, eps=1e-5):
    """mean, then the mean of the centred squares, in the input's dtype."""
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps) * gain + bias


def _ln_one_pass(x, gain, bias, eps=1e-5):
    """The variance as mean(x^2) - mean(x)^2, in the input's dtype."""
    mu = x.mean(axis=-1, keepdims=True)
    return gain * ((x - mu) / np.sqrt((x * x).mean(axis=-1, keepdims=True) - mu * mu + eps)) + bias


def _ln_loop(x, gain, bias, eps=1e-5):
    """One row at a time with Python's math (math.fsum, float64)."""
    out = np.zeros(x.shape, dtype=np.float64)
    for idx in np.ndindex(x.shape[:-1]):
        row = [float(t) for t in x[idx]]
        mu = math.fsum(row) / len(row)
        s = math.sqrt(math.fsum((t - mu) ** 2 for t in row) / len(row) + eps)
        out[idx] = [(t - mu) / s * float(g) + float(b) for t, g, b in zip(row, gain, bias)]
    return out.astype(x.dtype)


def _ffn_matmul(x, w_1, b_1, w_2, b_2):
    return np.maximum(x @ w_1 + b_1, 0) @ w_2 + b_2


def _ffn_einsum64(x, w_1, b_1, w_2, b_2):
    z, w1, b1, w2, b2 = (a.astype(np.float64) for a in (x, w_1, b_1, w_2, b_2))
    hidden = np.einsum("...nc,cf->...nf", z, w1) + b1
    return (np.einsum("...nf,fc->...nc", hidden * (hidden > 0), w2) + b2).astype(x.dtype)


def _causal_mha(attn):
    """Multi-head self-attention with a causal mask, from an attention(q, k, v, mask) above."""

    def causal_self_attention(x, w_q, w_k, w_v, w_o, n_heads):
        n = x.shape[-2]
        heads, _ = attn(*(_split(x @ w, n_heads) for w in (w_q, w_k, w_v)), np.tri(n, dtype=bool))
        return _merge(heads) @ w_o

    return causal_self_attention


def _blocks(ln, ffn, mha):
    """pre_ln_block and post_ln_block from one LayerNorm, feed-forward layer and causal attention."""

    def pre_ln_block(x, attn, f, ln_1, ln_2, n_heads):
        h = x + mha(ln(x, *ln_1), *attn, n_heads)
        return h + ffn(ln(h, *ln_2), *f)

    def post_ln_block(x, attn, f, ln_1, ln_2, n_heads):
        h = ln(x + mha(x, *attn, n_heads), *ln_1)
        return ln(h + ffn(h, *f), *ln_2)

    return {"layer_norm": ln, "feed_forward": ffn, "pre_ln_block": pre_ln_block, "post_ln_block": post_ln_block}


def _rotate_in_dtype(x, positions):
    """The angles and the turn in the input's dtype (float32 stays float32 throughout)."""
    d = x.shape[-1]
    omega = (np.asarray(10000.0, dtype=x.dtype) ** (-np.arange(0, d, 2, dtype=x.dtype) / x.dtype.type(d))).astype(
        x.dtype
    )
    angles = np.asarray(positions).astype(x.dtype)[:, None] * omega
    a, b = x[..., 0::2], x[..., 1::2]
    return np.stack([a * np.cos(angles) - b * np.sin(angles), a * np.sin(angles) + b * np.cos(angles)], -1).reshape(
        x.shape
    )


def _rotate_complex64(x, positions):
    """Each pair a complex number times exp(i angle), in complex128, the frequencies as exp of a log."""
    d = x.shape[-1]
    omega = np.exp(-np.log(10000.0) * np.arange(0, d, 2) / d)
    z = (x[..., 0::2].astype(np.float64) + 1j * x[..., 1::2]) * np.exp(1j * np.outer(positions, omega))
    out = np.empty(x.shape)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out.astype(x.dtype)


def _gqa_repeat(attn):
    def grouped_query_attention(q, k, v, is_causal=False):
        g = q.shape[-3] // k.shape[-3]
        mask = np.tri(q.shape[-2], k.shape[-2], dtype=bool) if is_causal else None
        return attn(q, np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3), mask)[0]

    return grouped_query_attention


def _gqa_grouped64(q, k, v, is_causal=False):
    """The queries reshaped into (h_kv, group), each shared head broadcast over its group, in float64."""
    *lead, h, n_q, d_k = q.shape
    h_kv = k.shape[-3]
    q5 = q.reshape(*lead, h_kv, h // h_kv, n_q, d_k)
    mask = np.tri(n_q, k.shape[-2], dtype=bool) if is_causal else None
    out, _ = _attention64(q5, k[..., None, :, :], v[..., None, :, :], mask)
    return out.reshape(*lead, h, n_q, v.shape[-1])


def _decoder(rotate, gqa, preallocate):
    """hw12's three functions: a prefill, then one row per step with a cache (concatenated or preallocated)."""

    def decode_with_cache(x, w_q, w_k, w_v, n_heads, n_kv_heads, n_prompt):
        n = x.shape[-2]
        heads = [(_split(x @ w, c)) for w, c in ((w_q, n_heads), (w_k, n_kv_heads), (w_v, n_kv_heads))]
        q, k, v = heads[0], rotate(heads[1], np.arange(n)), heads[2]
        q = rotate(q, np.arange(n))
        outs = [gqa(q[..., :n_prompt, :], k[..., :n_prompt, :], v[..., :n_prompt, :], is_causal=True)]
        keys, values = (np.zeros_like(a) if preallocate else a[..., :n_prompt, :] for a in (k, v))
        if preallocate:
            keys[..., :n_prompt, :], values[..., :n_prompt, :] = k[..., :n_prompt, :], v[..., :n_prompt, :]
        for i in range(n_prompt, n):
            # each step projects and turns its own row, as a decoder must
            row = x[..., i : i + 1, :]
            k_i = rotate(_split(row @ w_k, n_kv_heads), np.array([i]))
            v_i = _split(row @ w_v, n_kv_heads)
            if preallocate:
                keys[..., i : i + 1, :], values[..., i : i + 1, :] = k_i, v_i
                held = keys[..., : i + 1, :], values[..., : i + 1, :]
            else:
                keys, values = np.concatenate([keys, k_i], -2), np.concatenate([values, v_i], -2)
                held = keys, values
            outs.append(gqa(rotate(_split(row @ w_q, n_heads), np.array([i])), *held))
        return np.concatenate(outs, axis=-2)

    return {"rotate": rotate, "grouped_query_attention": gqa, "decode_with_cache": decode_with_cache}


def _pair_masks(weights, lengths):
    """Boolean (batch, n, n) masks of the previous-token and the induction pairs (query, key)."""
    b, n = weights.shape[0], weights.shape[-1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    L = np.asarray(lengths)[:, None, None]
    previous = (j == i - 1) & (i >= 1) & (i < 2 * L)
    induction = (j == i - L + 1) & (i >= L) & (i <= 2 * L - 2)
    return np.broadcast_to(previous, (b, n, n)), np.broadcast_to(induction, (b, n, n))


def _score_by_mask(which):
    def score(weights, lengths):
        mask = _pair_masks(weights, lengths)[which][:, None]
        return (weights * mask).sum(axis=(0, 2, 3)) / mask[:, 0].sum()

    return score


def _score_by_diagonal(which):
    def score(weights, lengths):
        parts = []
        for w, L in zip(weights, np.asarray(lengths).tolist()):
            if which == 0:
                parts.append(np.diagonal(w, offset=-1, axis1=-2, axis2=-1)[:, : 2 * L - 1])
            else:
                parts.append(np.diagonal(w, offset=1 - L, axis1=-2, axis2=-1)[:, 1:L])
        return np.concatenate(parts, axis=-1).astype(np.float64).mean(axis=-1)

    return score


def _tiny_layer(attn):
    """One layer of chapter 11's model from an attention(q, k, v, mask) above, head by head."""

    def attention_layer(x, w_q, w_k, w_v, w_o, knocked):
        out = x
        for g in sorted(set(range(w_q.shape[0])) - set(knocked)):
            o, _ = attn(x @ w_q[g], x @ w_k[g], x @ w_v[g], np.tri(x.shape[-2], dtype=bool))
            out = out + o @ w_o[g]
        return out

    return attention_layer


def _reading(score, attn):
    return {"previous_token_score": score(0), "induction_score": score(1), "attention_layer": _tiny_layer(attn)}


IMPLEMENTATIONS: dict[str, list[dict]] = {
    "hw1_dot_product_scores": [
        {"scores_loop": _scores_loop, "scores_vectorized": lambda x: np.einsum("...id,...jd->...ij", x, x)},
        {
            "scores_loop": lambda x: np.array([x @ row for row in x], dtype=x.dtype).reshape(len(x), len(x)),
            "scores_vectorized": lambda x: (x.astype(np.float64) @ np.swapaxes(x, -1, -2).astype(np.float64)).astype(
                x.dtype
            ),
        },
    ],
    "hw2_stable_softmax": [{"softmax_rows": f} for f in SOFTMAXES],
    "hw3_queries_keys_values": [
        {
            "project_qkv": lambda x, *ws: tuple(np.einsum("...nd,de->...ne", x, w) for w in ws),
            "score_matrix": lambda q, k: np.einsum("...id,...jd->...ij", q, k),
        },
        {
            "project_qkv": lambda x, *ws: tuple(
                (x.astype(np.float64) @ w.astype(np.float64)).astype(x.dtype) for w in ws
            ),
            "score_matrix": lambda q, k: (q[..., :, None, :] * k[..., None, :, :]).sum(-1),
        },
    ],
    "hw4_scaled_dot_product_attention": [
        {"attend_one_query": _one_query(_attention), "attention": _attention},
        {"attend_one_query": _one_query(_attention64), "attention": _attention64},
        {
            "attend_one_query": _one_query(
                lambda q, k, v: _attention(q, k, v, softmax=softmax_logsumexp, split_scale=True)
            ),
            "attention": lambda q, k, v: _attention(q, k, v, softmax=softmax_logsumexp, split_scale=True),
        },
    ],
    "hw6_causal_masking": [
        {"causal_mask": _causal, "masked_attention": _attention},
        {"causal_mask": lambda n_q, n_k: ~np.triu(np.ones((n_q, n_k), bool), 1), "masked_attention": _attention64},
        {
            "causal_mask": lambda n_q, n_k: np.arange(n_k) <= np.arange(n_q)[:, None],
            "masked_attention": lambda q, k, v, mask: _attention(
                q, k, v, mask, softmax=softmax_logsumexp, split_scale=True
            ),
        },
    ],
    "hw7_multi_head_attention": [
        {"split_heads": _split, "merge_heads": _merge, "multi_head_attention": _mha(_attention)},
        {
            "split_heads": lambda x, h: np.swapaxes(x.reshape(*x.shape[:-1], h, -1), -2, -3),
            "merge_heads": lambda x: np.concatenate(list(np.moveaxis(x, -3, 0)), axis=-1),
            "multi_head_attention": _mha_per_head,
        },
        {
            "split_heads": _split,
            "merge_heads": _merge,
            "multi_head_attention": _mha(
                lambda q, k, v: _attention(q, k, v, softmax=softmax_logsumexp, split_scale=True)
            ),
        },
    ],
    "hw8_online_softmax": [
        {
            "running_max_and_sum": _running_shift,
            "online_softmax": _online(_running_shift, _from_state_divide),
            "blocked_attention": _blocked(False),
        },
        {
            "running_max_and_sum": _running_lse,
            "online_softmax": _online(_running_lse, _from_state_log),
            "blocked_attention": _blocked(True),
        },
        {
            "running_max_and_sum": _running_shift,
            "online_softmax": _online(_running_lse, _from_state_divide),
            "blocked_attention": _blocked_per_query,
        },
    ],
    "hw9_attention_backward": [
        {"softmax_backward": _softmax_backward_expanded, "attention_backward": _attention_backward()},
        {"softmax_backward": _softmax_backward_jacobian64, "attention_backward": _attention_backward64},
        {"softmax_backward": _softmax_backward_loop, "attention_backward": _attention_backward_loops},
        {
            "softmax_backward": _softmax_backward_expanded,
            "attention_backward": _attention_backward(softmax_logsumexp, _softmax_backward_loop, split_scale=True),
        },
    ],
    "hw10_transformer_block": [
        _blocks(_ln_two_pass, _ffn_matmul, _causal_mha(_attention)),
        _blocks(_ln_loop, _ffn_einsum64, _causal_mha(_attention64)),
        _blocks(
            _ln_one_pass,
            _ffn_matmul,
            _causal_mha(lambda q, k, v, mask: _attention(q, k, v, mask, softmax=softmax_logsumexp, split_scale=True)),
        ),
    ],
    "hw11_reading_a_circuit": [
        _reading(_score_by_mask, _attention),
        _reading(_score_by_diagonal, lambda q, k, v, mask: _attention(q, k, v, mask, softmax=softmax_logsumexp)),
        _reading(_score_by_mask, _attention64),
    ],
    "hw12_kv_cache_gqa": [
        _decoder(_rotate_in_dtype, _gqa_repeat(_attention), preallocate=False),
        _decoder(_rotate_complex64, _gqa_grouped64, preallocate=True),
        _decoder(
            _rotate_in_dtype,
            _gqa_repeat(lambda q, k, v, mask: _attention(q, k, v, mask, softmax=softmax_logsumexp, split_scale=True)),
            preallocate=True,
        ),
    ],
}

CHECKS = [(a, c.id) for a, checks in grading.all_checks().items() for c in checks if a in IMPLEMENTATIONS]


def test_every_assignment_but_the_statistical_one_has_several_implementations():
    assert set(IMPLEMENTATIONS) | {"hw5_sqrt_dk_experiment"} >= set(grading.ASSIGNMENTS)
    assert all(len(impls) >= 2 for impls in IMPLEMENTATIONS.values())


@pytest.mark.parametrize(("assignment", "check_id"), CHECKS)
@settings(max_examples=8, derandomize=True, deadline=None)
@given(seed=grading_seeds)
def test_correct_implementations_earn_full_marks_on_random_hidden_inputs(assignment, check_id, seed):
    check = grading.get_check(assignment, check_id)
    for functions in IMPLEMENTATIONS[assignment]:
        verdict = check.grade(functions, seed if check.hidden else None)
        assert verdict.passed, (functions[check.functions[0]], verdict.message)


def _verdict(assignment: str, check_id: str, functions: dict, *args) -> Verdict:
    check = grading.get_check(assignment, check_id)
    case = make_case(check.functions[0], *args, label="drawn by Hypothesis")
    return check.compare([case], run_cases(functions, [case]))


@settings(max_examples=200, derandomize=True, deadline=None)
@given(z=extreme_logits())
def test_every_sound_softmax_passes_homework_2_on_extreme_logits(z):
    for f in SOFTMAXES:
        verdict = _verdict("hw2_stable_softmax", "softmax_hidden", {"softmax_rows": f}, z)
        assert verdict.passed, (f.__name__, z, verdict.message)


@settings(max_examples=100, derandomize=True, deadline=None)
@given(z=extreme_logits(), size=st.integers(1, 4))
def test_every_sound_online_softmax_passes_homework_8_on_extreme_logits(z, size):
    size = max(size, -(-z.shape[-1] // 16))  # at most 16 blocks (plain data holds 16 items)
    for functions in IMPLEMENTATIONS["hw8_online_softmax"]:
        for check_id in ("online_softmax_hidden", "running_state_hidden"):
            verdict = _verdict("hw8_online_softmax", check_id, functions, z, size)
            assert verdict.passed, (check_id, z, size, verdict.message)


@settings(max_examples=80, derandomize=True, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float64]),
    lead=st.sampled_from([(), (2,), (2, 2)]),
    n_q=st.integers(1, 5),
    n_k=st.integers(1, 5),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 3),
    scale=st.sampled_from([0.1, 1.0, 4.0, 12.0]),
)
def test_every_sound_attention_passes_homeworks_4_and_6_with_large_scores(data, dtype, lead, n_q, n_k, d_k, d_v, scale):
    rng = np.random.default_rng(data.draw(grading_seeds))
    q, k = ((rng.standard_normal((*lead, n, d_k)) * scale).astype(dtype) for n in (n_q, n_k))
    v = rng.standard_normal((*lead, n_k, d_v)).astype(dtype)
    mask = rng.random((n_q, n_k)) < 0.6
    for functions in IMPLEMENTATIONS["hw4_scaled_dot_product_attention"]:
        verdict = _verdict("hw4_scaled_dot_product_attention", "attention_matrix_hidden", functions, q, k, v)
        assert verdict.passed, verdict.message
    for functions in IMPLEMENTATIONS["hw6_causal_masking"]:
        verdict = _verdict("hw6_causal_masking", "masked_attention_hidden", functions, q, k, v, mask)
        assert verdict.passed, verdict.message


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float64]),
    lead=st.sampled_from([(), (2,), (2, 2)]),
    n_q=st.integers(1, 5),
    n_k=st.integers(1, 5),
    d_k=st.integers(1, 6),
    d_v=st.integers(1, 3),
    scale=st.sampled_from([0.1, 1.0, 4.0, 12.0]),
    masked=st.booleans(),
)
def test_every_sound_backward_pass_passes_homework_9_with_large_scores(
    data, dtype, lead, n_q, n_k, d_k, d_v, scale, masked
):
    """Large scores make the weights nearly one-hot, where dS is a difference of nearly equal numbers."""
    rng = np.random.default_rng(data.draw(grading_seeds))
    q, k = ((rng.standard_normal((*lead, n, d_k)) * scale).astype(dtype) for n in (n_q, n_k))
    v = rng.standard_normal((*lead, n_k, d_v)).astype(dtype)
    g = (rng.standard_normal((*lead, n_q, d_v)) * 10.0 ** rng.uniform(-1, 1)).astype(dtype)
    mask = rng.random((n_q, n_k)) < 0.6 if masked else None
    _, a = _attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), mask)
    for functions in IMPLEMENTATIONS["hw9_attention_backward"]:
        verdict = _verdict(
            "hw9_attention_backward", "softmax_backward_hidden", functions, a.astype(dtype), g @ np.swapaxes(v, -1, -2)
        )
        assert verdict.passed, verdict.message
        for check_id in ("attention_dv_hidden", "attention_dq_dk_hidden"):
            verdict = _verdict("hw9_attention_backward", check_id, functions, q, k, v, g, mask)
            assert verdict.passed, (check_id, verdict.message)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float64]),
    lead=st.sampled_from([(), (2,), (2, 2)]),
    n=st.integers(1, 5),
    d=st.integers(2, 32),
    offset=st.sampled_from([0.0, 1.0, 1e3]),
    spread=st.sampled_from([0.0, 1e-4, 1e-2, 1.0, 1e2]),
)
def test_every_two_pass_layer_norm_passes_homework_10_on_extreme_rows(data, dtype, lead, n, d, offset, spread):
    """Constant rows, rows far from 0 and rows whose variance is below eps: the tolerance follows
    each row's conditioning, so every two-pass method passes (the one-pass variance is sound only on
    rows whose mean is not far above their spread, as the hidden inputs are)."""
    rng = np.random.default_rng(data.draw(grading_seeds))
    x = (offset + spread * rng.standard_normal((*lead, n, d))).astype(dtype)
    gain, bias = (1 + rng.standard_normal(d)).astype(dtype), rng.standard_normal(d).astype(dtype)
    for ln in (
        _ln_two_pass,
        _ln_loop,
        lambda x, g, b, eps=1e-5: _ln_two_pass(x.astype(np.float64), g, b).astype(x.dtype),
    ):
        verdict = _verdict("hw10_transformer_block", "layer_norm_hidden", {"layer_norm": ln}, x, gain, bias)
        assert verdict.passed, verdict.message


def test_the_reproduced_logsumexp_softmax_now_earns_full_marks():
    """A sound softmax that a fixed tolerance of 1e-4 on the row sums would fail:
    exp(z - logsumexp(z)) in float32 at logits of 1e4 sums to 0.999785."""
    z = np.array([[1e4, 1e4 - 1, 0.0], [-1e4, 0.0, 1e4]], dtype=np.float32)
    w = softmax_logsumexp(z)
    assert abs(float(w.astype(np.float64).sum(axis=-1)[0]) - 1) > 1e-4  # off by more than a fixed 1e-4 allows
    check = grading.get_check("hw2_stable_softmax", "softmax_large")
    assert check.grade({"softmax_rows": softmax_logsumexp}).passed


def test_a_row_just_off_one_is_never_reported_as_summing_to_1():
    """A float64 row 2e-7 short of 1 fails the row-sum check; the message shows digits enough to differ from 1."""
    from sdpa_course.grading.authoring.weights import check_weight_rows
    from sdpa_course.grading.compare import Mismatch

    got = np.array([[0.5, 0.5 - 2e-7]])
    with pytest.raises(Mismatch) as caught:
        check_weight_rows(got, np.ones_like(got, dtype=bool), what="weights")
    shown = str(caught.value).split("sums to ", 1)[1].split(",")[0]
    assert float(shown) != 1.0 and float(shown) == pytest.approx(1 - 2e-7, abs=1e-12), caught.value
