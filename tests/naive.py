"""An independent attention, written with plain Python floats and math.exp.

The tests compare lib against it; it shares no code with lib.
"""

from __future__ import annotations

import math


def naive_attention(q, k, v, allowed=None, scale=None, added=None):
    """Rows of q attend over rows of k/v; allowed[i][j] False forbids a pair.

    ``added[i][j]`` (optional) is added to the scaled score of pair (i, j), a
    float mask; -inf forbids the pair. Returns (output rows, weight rows) as
    nested lists of floats.
    """
    d_k = len(q[0])
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    outputs, weights = [], []
    for i, qi in enumerate(q):
        permitted = [
            j
            for j in range(len(k))
            if (allowed is None or allowed[i][j]) and (added is None or added[i][j] != -math.inf)
        ]
        shift = [0.0] * len(k) if added is None else added[i]
        logits = {j: scale * sum(a * b for a, b in zip(qi, k[j])) + shift[j] for j in permitted}
        top = max(logits.values(), default=0.0)
        exps = {j: math.exp(s - top) for j, s in logits.items()}
        total = sum(exps.values())
        row = [exps[j] / total if j in exps else 0.0 for j in range(len(k))]
        weights.append(row)
        outputs.append([sum(row[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]))])
    return outputs, weights


def softmax(z):
    """Softmax of a list of floats, shifted by its maximum."""
    top = max(z)
    e = [math.exp(v - top) for v in z]
    return [v / sum(e) for v in e]


def dot(a, b):
    """Dot product of two lists of floats."""
    return sum(x * y for x, y in zip(a, b))


def matmul(a, b):
    """Product of two matrices given as lists of rows."""
    return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def layer_norm_row(row, gain=None, bias=None, eps=1e-5):
    """One token vector normalised to mean 0 and (divide-by-d) variance 1, then gain and bias."""
    d = len(row)
    mean = sum(row) / d
    var = sum((v - mean) ** 2 for v in row) / d
    out = [(v - mean) / math.sqrt(var + eps) for v in row]
    if gain is not None:
        out = [o * g for o, g in zip(out, gain)]
    if bias is not None:
        out = [o + b for o, b in zip(out, bias)]
    return out


def feed_forward_row(row, w_1, b_1, w_2, b_2):
    """max(0, row W_1 + b_1) W_2 + b_2 for one token, with plain loops."""
    hidden = [max(0.0, sum(row[t] * w_1[t][j] for t in range(len(row))) + b_1[j]) for j in range(len(b_1))]
    return [sum(hidden[t] * w_2[t][j] for t in range(len(hidden))) + b_2[j] for j in range(len(b_2))]


def naive_block(x, w, n_heads, norm="pre", causal=False, eps=1e-5):
    """One Transformer block on the rows of x (lists); ``w`` maps the names of
    lib.BlockWeights' fields to nested lists. Pre-LN or post-LN."""
    n, d = len(x), len(x[0])
    width = d // n_heads
    allowed = [[j <= i for j in range(n)] for i in range(n)] if causal else None

    def attend(rows):
        q, k, v = matmul(rows, w["w_q"]), matmul(rows, w["w_k"]), matmul(rows, w["w_v"])
        concat = [[] for _ in range(n)]
        for head in range(n_heads):
            cols = range(head * width, (head + 1) * width)
            out, _ = naive_attention(
                [[r[c] for c in cols] for r in q],
                [[r[c] for c in cols] for r in k],
                [[r[c] for c in cols] for r in v],
                allowed,
            )
            for i in range(n):
                concat[i].extend(out[i])
        return matmul(concat, w["w_o"])

    def ffn(rows):
        return [feed_forward_row(r, w["w_1"], w["b_1"], w["w_2"], w["b_2"]) for r in rows]

    def ln(rows, which):
        return [layer_norm_row(r, w[f"gain_{which}"], w[f"bias_{which}"], eps) for r in rows]

    def add(a, b):
        return [[p + q for p, q in zip(ra, rb)] for ra, rb in zip(a, b)]

    if norm == "pre":
        h = add(x, attend(ln(x, 1)))
        return add(h, ffn(ln(h, 2)))
    h = ln(add(x, attend(x)), 1)
    return ln(add(h, ffn(h)), 2)
