"""Chapter 12's pieces written again with plain Python floats and math.cos/sin.

The tests compare lib's rotary embeddings, grouped-query attention,
sliding-window mask and decoder heads against these; they share no code with
lib (attention itself comes from ``tests/naive.py``).
"""

from __future__ import annotations

import math

from naive import matmul, naive_attention


def window_allowed(n_q: int, n_k: int, window: int | None) -> list[list[bool]]:
    """allowed[i][j]: j <= i, and (with a window) i - j < window."""
    return [[j <= i and (window is None or i - j < window) for j in range(n_k)] for i in range(n_q)]


def rotate_row(row: list[float], position: int, base: float = 10000.0) -> list[float]:
    """Turn each pair (2r, 2r + 1) of ``row`` by position * base ** (-2r / d)."""
    d = len(row)
    out = list(row)
    for r in range(d // 2):
        angle = position * base ** (-2 * r / d)
        a, b = row[2 * r], row[2 * r + 1]
        out[2 * r] = a * math.cos(angle) - b * math.sin(angle)
        out[2 * r + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out


def sinusoid(n: int, d: int) -> list[list[float]]:
    """Vaswani et al.'s encoding: row i holds sin and cos of i / 10000 ** (2r / d)."""
    rows = []
    for i in range(n):
        row = []
        for r in range(d // 2):
            angle = i / 10000 ** (2 * r / d)
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return rows


def grouped(q, k, v, allowed=None):
    """q[l] (h heads), k[g] and v[g] (h_kv heads) as nested lists: head l reads head l // (h / h_kv).

    Returns (outputs, weights), one entry per query head."""
    group = len(q) // len(k)
    outs, weights = [], []
    for head, q_head in enumerate(q):
        out, w = naive_attention(q_head, k[head // group], v[head // group], allowed=allowed)
        outs.append(out)
        weights.append(w)
    return outs, weights


def columns(rows, start, stop):
    return [r[start:stop] for r in rows]


def decoder_heads(x, w_q, w_k, w_v, n_heads, n_kv_heads, rotary=False, window=None):
    """The heads of a decoder's self-attention (nested lists, one entry per query head)."""
    q_all, k_all, v_all = matmul(x, w_q), matmul(x, w_k), matmul(x, w_v)
    d_k, d_v = len(q_all[0]) // n_heads, len(v_all[0]) // n_kv_heads
    q = [columns(q_all, l * d_k, (l + 1) * d_k) for l in range(n_heads)]
    k = [columns(k_all, g * d_k, (g + 1) * d_k) for g in range(n_kv_heads)]
    v = [columns(v_all, g * d_v, (g + 1) * d_v) for g in range(n_kv_heads)]
    if rotary:
        q = [[rotate_row(row, i) for i, row in enumerate(head)] for head in q]
        k = [[rotate_row(row, i) for i, row in enumerate(head)] for head in k]
    n = len(x)
    return grouped(q, k, v, window_allowed(n, n, window))[0]
