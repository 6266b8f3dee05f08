"""Small fixed inputs that the chapters, exercises and tests share.

Only inputs live here, never expected results: every number the book shows
is computed from these by the library, and the tests check it independently.
"""

from __future__ import annotations

import numpy as np

__all__ = ["seed_toy_example", "example_sentence", "example_projections", "SENTENCE"]

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


def example_projections(d_model: int = 4, d_k: int = 3, d_v: int = 2, seed: int = 1) -> dict[str, np.ndarray]:
    """Reproducible projection matrices for the example sentence.

    Returns ``{"w_q": (d_model, d_k), "w_k": (d_model, d_k), "w_v": (d_model, d_v)}``
    with entries drawn from N(0, 1/d_model), the usual initialisation scale: a
    token vector with unit-variance components is mapped to components of
    variance about one. Chapters 3 and 4 share these matrices.

    Examples
    --------
    >>> w = example_projections()
    >>> w["w_q"].shape, w["w_k"].shape, w["w_v"].shape
    ((4, 3), (4, 3), (4, 2))
    >>> bool((example_projections()["w_q"] == w["w_q"]).all())
    True
    """
    for name, size in (("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"{name} must be a positive integer; got {size!r}")
    rng = np.random.default_rng(seed)
    std = 1.0 / np.sqrt(d_model)
    return {
        "w_q": rng.normal(scale=std, size=(d_model, d_k)),
        "w_k": rng.normal(scale=std, size=(d_model, d_k)),
        "w_v": rng.normal(scale=std, size=(d_model, d_v)),
    }
