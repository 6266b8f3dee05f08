"""Homework 8's usual mistake, computed so that its judges can name it: a running sum (and
weighted sum of values) not rescaled by ``exp(m_old - m_new)`` when the maximum grows."""

from __future__ import annotations

import numpy as np


def sums_without_rescale(x: np.ndarray, size: int, direction: int) -> list[np.ndarray]:
    """The running sums of a common mistake: the old sum rescaled by
    exp(direction * (m_old - m_new)) with direction 0 (not at all) or -1 (the wrong way)."""
    m = np.full(x.shape[:-1], -np.inf)
    total = np.zeros(x.shape[:-1])
    sums = []
    with np.errstate(all="ignore"):
        for start in range(0, x.shape[-1], size):
            block = x[..., start : start + size].astype(np.float64)
            m_new = np.maximum(m, block.max(axis=-1))
            shift = np.where(np.isneginf(m_new), 0.0, m_new)
            # Nothing seen yet (m = -inf): the old sum is 0 and stays 0 (never inf * 0 = NaN).
            factor = np.where(np.isneginf(m), 0.0, np.exp(direction * (m - shift)))
            total = total * (factor if direction else 1.0) + np.exp(block - shift[..., None]).sum(axis=-1)
            m = m_new
            sums.append(total)
    return sums


def softmax_without_rescale(x: np.ndarray, size: int) -> np.ndarray:
    """The online softmax of a learner whose running sum is never rescaled."""
    with np.errstate(all="ignore"):
        m = x.astype(np.float64).max(axis=-1, keepdims=True)
        shift = np.where(np.isneginf(m), 0, m)
        total = sums_without_rescale(x, size, 0)[-1][..., None]
        weights: np.ndarray = np.exp(x - shift) / np.where(total == 0, 1, total)
        return weights


def attention_without_rescale(q: np.ndarray, blocks: list[tuple[np.ndarray, ...]]) -> np.ndarray:
    """Blocked attention with a common mistake: the running sum and the weighted
    values are not rescaled by exp(m_old - m_new) when the maximum grows."""
    q64 = q.astype(np.float64)
    m = np.full((q.shape[0], 1), -np.inf)
    l = np.zeros((q.shape[0], 1))
    acc = np.zeros((q.shape[0], blocks[0][1].shape[1]))
    with np.errstate(all="ignore"):
        for k_b, v_b, allowed_b in blocks:
            s = np.where(allowed_b, q64 @ k_b.astype(np.float64).T / np.sqrt(q.shape[1]), -np.inf)
            m = np.maximum(m, s.max(axis=1, keepdims=True, initial=-np.inf))
            p = np.exp(s - np.where(np.isneginf(m), 0, m))
            l = l + p.sum(axis=1, keepdims=True)
            acc = acc + p @ v_b.astype(np.float64)
    return acc / np.where(l == 0, 1, l)
