"""Positions as angles: the sinusoidal encoding and rotary position embeddings.

Both use the same frequencies, one per pair of coordinates ``(2r, 2r + 1)``:
``omega_r = base ** (-2r / d)`` with ``base = 10000``. The sinusoidal
encoding of Vaswani et al. *adds* ``(sin i omega_r, cos i omega_r)`` to the
token vector of position i; rotary position embeddings (Su et al., RoFormer)
*rotate* each pair of a query or a key by the angle ``i omega_r`` instead, so
that the score of query position i and key position j depends on the two
positions only through ``i - j``.

Vectors are rows, as everywhere in :mod:`lib`: the rotation of a row x by
the angle phi maps the pair ``(x_2r, x_2r+1)`` to
``(x_2r cos phi - x_2r+1 sin phi, x_2r sin phi + x_2r+1 cos phi)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import as_float_array, as_int

__all__ = ["rotary_frequencies", "sinusoidal_positions", "rotate"]


def _even_width(d: Any, name: str) -> int:
    width = as_int(d, name, minimum=2)
    if width % 2:
        raise ValueError(f"{name} must be even (the coordinates go in pairs (2r, 2r + 1)); got {width}")
    return width


def _base(base: Any) -> float:
    if isinstance(base, bool | np.bool_) or not isinstance(base, int | float | np.number):
        raise TypeError(f"base must be a real number; got {type(base).__name__} {base!r}")
    if not (np.isfinite(base) and base > 1):
        raise ValueError(f"base must be a finite number above 1; got {base!r}")
    return float(base)


def rotary_frequencies(d: int, *, base: float = 10000.0) -> np.ndarray:
    """The angle per position of each pair of coordinates: ``omega_r = base ** (-2r / d)``.

    Pair r = 0 turns by one radian per position, the fastest; the last pair
    turns slowest. Chapter 9's sinusoid and rotary embeddings share them.

    Parameters
    ----------
    d : int
        The width of the vectors (even): d_model for the sinusoid, d_k for
        rotary embeddings.
    base : float
        10000 in both papers.

    Returns
    -------
    numpy.ndarray of float64, shape (d // 2,)

    Examples
    --------
    >>> rotary_frequencies(8)
    array([1.   , 0.1  , 0.01 , 0.001])
    """
    width = _even_width(d, "d")
    return _base(base) ** (-np.arange(0, width, 2) / width)


def sinusoidal_positions(n: int, d: int, *, base: float = 10000.0) -> np.ndarray:
    """Vaswani et al.'s positional encoding: ``p[i, 2r] = sin(i omega_r)``, ``p[i, 2r+1] = cos(i omega_r)``.

    Parameters
    ----------
    n : int
        Number of positions (rows), 0 to n - 1.
    d : int
        Width of each row (even), the d_model of the tokens it is added to.
    base : float
        10000 in the paper.

    Returns
    -------
    numpy.ndarray of float64, shape (n, d)

    Examples
    --------
    >>> np.round(sinusoidal_positions(2, 4), 4)
    array([[0.    , 1.    , 0.    , 1.    ],
           [0.8415, 0.5403, 0.01  , 1.    ]])
    """
    rows = as_int(n, "n", minimum=0)
    angles = np.arange(rows)[:, None] * rotary_frequencies(d, base=base)
    p = np.empty((rows, 2 * angles.shape[1]))
    p[:, 0::2] = np.sin(angles)
    p[:, 1::2] = np.cos(angles)
    return p


def _positions(positions: Any, rows: tuple[int, ...]) -> np.ndarray:
    """Check the positions: integers whose shape broadcasts to ``rows`` (x's shape without d)."""
    if positions is None:
        return np.arange(rows[-1])
    pos = np.asarray(positions)
    if pos.dtype == np.bool_ or not np.issubdtype(pos.dtype, np.integer):
        raise TypeError(f"positions must be integers (0 for the first token); got dtype {pos.dtype}")
    try:
        fits = np.broadcast_shapes(pos.shape, rows) == rows
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"positions of shape {pos.shape} do not fit x: they must broadcast to x's shape without its "
            f"last axis, {rows} (..., n), one position per row"
        )
    return pos


def rotate(x: Any, positions: Any | None = None, *, base: float = 10000.0) -> np.ndarray:
    """Rotary position embedding: turn each pair of coordinates of row i by the angle ``positions[i] * omega_r``.

    Apply it to the queries and to the keys (never to the values), after the
    projections and before the scores. Then the score of query position i and
    key position j, ``rotate(q)_i rotate(k)_j^T``, equals ``q_i R(i - j) k_j^T``,
    where ``R(i - j)`` turns pair r by ``(i - j) omega_r``: it depends on the
    offset alone, so moving both positions by the same amount leaves the score
    unchanged (up to rounding). The length of every row is kept.

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        Queries or keys, one per row; d must be even.
    positions : array_like of int, broadcastable to (..., n), optional
        The position of each row; defaults to 0, 1, ..., n - 1. A decoder
        that appends one key at a time passes that key's own position.
    base : float
        10000 in Su et al.'s paper.

    Returns
    -------
    numpy.ndarray, shape (..., n, d), of x's float dtype

    Examples
    --------
    Position 0 is not turned; position 1 turns pair 0 by one radian.

    >>> x = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])
    >>> np.round(rotate(x), 4)
    array([[1.    , 0.    , 1.    , 0.    ],
           [0.5403, 0.8415, 1.    , 0.01  ]])

    The score depends on the positions only through their offset:

    >>> q, k = np.array([[0.3, -1.2, 0.5, 2.0]]), np.array([[1.1, 0.4, -0.7, 0.2]])
    >>> near = rotate(q, [5]) @ rotate(k, [3]).T
    >>> far = rotate(q, [105]) @ rotate(k, [103]).T
    >>> bool(np.allclose(near, far, rtol=0, atol=1e-12))
    True
    """
    xa = as_float_array(x, "x", min_ndim=2, layout="(..., n, d)")
    width = xa.shape[-1]
    if width % 2 or width == 0:
        raise ValueError(
            "the width d of x must be even and at least 2 (its coordinates are turned in pairs (2r, 2r + 1)); "
            f"x has shape {xa.shape}"
        )
    pos = _positions(positions, xa.shape[:-1])
    angles = pos[..., None] * rotary_frequencies(width, base=base)
    cos, sin = np.cos(angles).astype(xa.dtype), np.sin(angles).astype(xa.dtype)
    even, odd = xa[..., 0::2], xa[..., 1::2]
    out = np.empty(np.broadcast_shapes(xa.shape, (*pos.shape, width)), dtype=xa.dtype)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
