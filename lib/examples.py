"""Small fixed inputs that the chapters, exercises and tests share.

Only inputs live here, never expected results: every number the book shows
is computed from these by the library, and the tests check it independently.
"""

from __future__ import annotations

import numpy as np

__all__ = ["seed_toy_example", "example_sentence", "SENTENCE"]

#: A short sentence whose tokens label the heatmaps of the chapters.
SENTENCE: tuple[str, ...] = ("the", "cat", "sat", "on", "the", "mat")


def seed_toy_example() -> dict[str, np.ndarray]:
    """Seed 002's deterministic toy example: Q (1x2), K (2x2), V (2x2), d_k = 2.

    Examples
    --------
    >>> ex = seed_toy_example()
    >>> ex["q"].shape, ex["k"].shape, ex["v"].shape
    ((1, 2), (2, 2), (2, 2))
    """
    return {
        "q": np.array([[1.0, 0.0]]),
        "k": np.array([[1.0, 0.0], [0.0, 1.0]]),
        "v": np.array([[2.0, 3.0], [4.0, 5.0]]),
    }


def example_sentence(d_model: int = 4, seed: int = 0) -> tuple[tuple[str, ...], np.ndarray]:
    """The example sentence with a reproducible random vector per token.

    Returns ``(tokens, x)`` with ``x`` of shape (len(tokens), d_model). The two
    occurrences of "the" get the same vector, as an embedding lookup would.

    Examples
    --------
    >>> tokens, x = example_sentence()
    >>> len(tokens), x.shape
    (6, (6, 4))
    >>> bool((x[0] == x[4]).all())
    True
    """
    rng = np.random.default_rng(seed)
    vocab = sorted(set(SENTENCE))
    table = {word: rng.normal(size=d_model) for word in vocab}
    return SENTENCE, np.stack([table[word] for word in SENTENCE])
