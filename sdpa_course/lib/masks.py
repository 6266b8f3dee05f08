"""Masks: which keys each query may attend to."""

from __future__ import annotations

import numpy as np

from ._checks import as_int

__all__ = ["causal_mask", "sliding_window_mask"]


def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """Boolean causal mask: ``True`` where query i may attend to key j, i.e. j <= i.

    When ``n_q != n_k`` the mask is aligned at the top left, as PyTorch's
    ``is_causal=True``: query 0 sees key 0, query i sees keys 0..i.

    Parameters
    ----------
    n_q : int
        Number of queries (rows).
    n_k : int, optional
        Number of keys (columns); defaults to ``n_q``.

    Returns
    -------
    numpy.ndarray of bool, shape (n_q, n_k)

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    >>> causal_mask(2, 4).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0]])
    """
    rows = as_int(n_q, "n_q", minimum=0)
    cols = rows if n_k is None else as_int(n_k, "n_k", minimum=0)
    return np.tri(rows, cols, dtype=bool)


def sliding_window_mask(n_q: int, n_k: int | None = None, *, window: int) -> np.ndarray:
    """Boolean banded causal mask: ``True`` where ``j <= i`` and ``i - j < window``.

    Query i may read the ``window`` most recent keys, its own included:
    keys ``i - window + 1, ..., i`` (those that exist). It is
    :func:`causal_mask` with every key more than ``window - 1`` places back
    forbidden too, and it is aligned at the top left in the same way. A
    window of ``n_q`` or more gives the causal mask itself.

    Parameters
    ----------
    n_q : int
        Number of queries (rows).
    n_k : int, optional
        Number of keys (columns); defaults to ``n_q``.
    window : int
        How many keys each query may read, itself included (1 or more).

    Returns
    -------
    numpy.ndarray of bool, shape (n_q, n_k)

    Examples
    --------
    >>> sliding_window_mask(5, window=3).astype(int)
    array([[1, 0, 0, 0, 0],
           [1, 1, 0, 0, 0],
           [1, 1, 1, 0, 0],
           [0, 1, 1, 1, 0],
           [0, 0, 1, 1, 1]])
    >>> bool((sliding_window_mask(4, window=4) == causal_mask(4)).all())
    True
    """
    rows = as_int(n_q, "n_q", minimum=0)
    cols = rows if n_k is None else as_int(n_k, "n_k", minimum=0)
    width = as_int(window, "window", minimum=1)
    too_old = np.tri(rows, cols, k=-width, dtype=bool)  # j <= i - window
    allowed: np.ndarray = np.tri(rows, cols, dtype=bool) & ~too_old
    return allowed
