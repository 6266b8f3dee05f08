"""The inputs of a check's cases: seeded random arrays, the book's example, a case's label (numpy only)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import DTypeLike

from ..compare import reference

DTYPES = (np.float64, np.float32)


BATCHES = ((), (3,), (2, 2))


def generator(seed: int, salt: int) -> np.random.Generator:
    """The random generator of one check: the same for the same (seed, salt)."""
    return np.random.default_rng([int(seed) & 0x7FFFFFFF, salt])


def inexact_root(d: int) -> int:
    """The first width from ``d`` up whose square root float32 rounds by 1e-8 of its value or more,
    so that a scale computed in float32 shows in a float64 result (a square, 1, 4, 9, ..., has an exact root)."""
    while abs(float(np.float32(np.sqrt(d))) - np.sqrt(d)) < 1e-8 * np.sqrt(d):
        d += 1
    return d


def normal(
    gen: np.random.Generator, shape: Sequence[int], dtype: DTypeLike = np.float64, scale: float = 1.0
) -> np.ndarray:
    return (gen.standard_normal(tuple(shape)) * scale).astype(dtype)


def sentence_qkv() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V of the book's example sentence under the chapters' projections."""
    lib = reference()
    _, x = lib.example_sentence()
    w = lib.example_projections()
    q, k, v = lib.project_qkv(x, w["w_q"], w["w_k"], w["w_v"])
    return q, k, v


def describe_inputs(**arrays: np.ndarray) -> str:
    """``"x (2, 3) float32"``-style description of a case's inputs."""
    parts = [f"{name} of shape {tuple(a.shape)}" for name, a in arrays.items()]
    dtypes = sorted({np.asarray(a).dtype.name for a in arrays.values()})
    return ", ".join(parts) + f", {'/'.join(dtypes)}"
