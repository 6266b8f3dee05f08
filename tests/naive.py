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
