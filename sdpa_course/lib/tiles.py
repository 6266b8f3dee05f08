"""Tile sizes for blocked attention, chosen from the processor's cache.

Blocked attention (:func:`lib.blocked_attention`) computes the score matrix
one tile at a time: ``rows`` queries by ``cols`` keys, for a group of
``heads`` batch entries at once. Between its two matrix products, every tile
goes through several elementwise passes (maximum, subtraction, exponential,
sum). A pass over data that sits in the processor's cache is much faster than
a pass that has to stream it from main memory, so the tile, together with
the slices of Q, K, V and of the output that it works on, should fit in the
cache of one core: its level-2 cache (L2) on today's x86 processors.

The cache sizes come from the machine itself: on Linux from
``/sys/devices/system/cpu/cpu0/cache/index*/``, else from ``os.sysconf``
(``SC_LEVEL2_CACHE_SIZE`` and its siblings, where the C library offers them).
When neither reports an L2 size, :data:`DEFAULT_L2_BYTES` is assumed.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

__all__ = ["DEFAULT_L2_BYTES", "Tile", "cache_sizes", "choose_tile", "tile_budget_bytes", "tile_steps"]

DEFAULT_L2_BYTES = 1 << 20
"""The L2 size assumed when the machine does not report one: 1 MiB, the
middle of what current x86 cores have per core (512 KiB to 2 MiB)."""

SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
_SYSCONF_NAMES = {
    "L1d": "SC_LEVEL1_DCACHE_SIZE",
    "L2": "SC_LEVEL2_CACHE_SIZE",
    "L3": "SC_LEVEL3_CACHE_SIZE",
}
MIN_SIDE = 16
"""The smallest tile side: below it, the fixed cost of each numpy call
(microseconds) outweighs anything the cache saves."""


class Tile(NamedTuple):
    """A tile of the score matrix: ``rows`` queries x ``cols`` keys, for
    ``heads`` batch entries at a time."""

    rows: int
    cols: int
    heads: int


def _parse_size(text: str) -> int | None:
    """``"2048K"`` -> 2097152; ``"32M"``, plain byte counts; None if unreadable."""
    text = text.strip().upper()
    factor = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if factor != 1 else text
    return int(digits) * factor if digits.isdigit() else None


def _sysfs_cache_sizes(root: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text())
        except OSError:
            continue
        if size is None or kind == "Instruction":
            continue
        sizes[f"L{level}d" if kind == "Data" else f"L{level}"] = size
    return sizes


@functools.cache
def cache_sizes(root: Path | None = None) -> dict[str, int]:
    """The data cache sizes of one core, in bytes, as the machine reports them.

    Keys are ``"L1d"``, ``"L2"`` and ``"L3"`` (whichever are known; an empty
    dict when none is). L3 is usually shared by all cores; L1 and L2 belong
    to one core.

    Parameters
    ----------
    root : Path, optional
        The sysfs folder of one CPU's caches (default: cpu0's on Linux).

    Examples
    --------
    >>> sizes = cache_sizes()
    >>> all(isinstance(v, int) and v > 0 for v in sizes.values())
    True
    """
    sizes = _sysfs_cache_sizes(SYSFS_CACHE if root is None else root)
    for key, name in _SYSCONF_NAMES.items():
        if key in sizes or name not in os.sysconf_names:
            continue
        try:
            value = os.sysconf(name)
        except (OSError, ValueError):
            continue
        if value > 0:
            sizes[key] = value
    return sizes


def tile_budget_bytes(l2_bytes: int | None = None) -> int:
    """Bytes that one tile and its slices of Q, K, V and the output may use.

    Half of the L2 cache of one core (the machine's, or ``l2_bytes``): the
    other half leaves room for what the hardware keeps there besides (the
    interpreter, the running state, lines that collide in the cache).
    """
    if l2_bytes is None:
        l2_bytes = cache_sizes().get("L2", DEFAULT_L2_BYTES)
    if l2_bytes < 1:
        raise ValueError(f"l2_bytes must be 1 or more; got {l2_bytes}")
    return l2_bytes // 2


def _working_set(rows: int, cols: int, d_k: int, d_v: int, itemsize: int) -> int:
    """Bytes touched per head by one tile step: the scores, and the slices of
    Q (rows x d_k), K (cols x d_k), V (cols x d_v) and the accumulator
    (rows x d_v)."""
    return itemsize * (rows * cols + rows * d_k + cols * (d_k + d_v) + rows * d_v)


def _balanced(n: int, side: int) -> int:
    """The side, at most ``side``, that cuts ``n`` into equal blocks (the last
    one no shorter than the others by more than rounding): e.g. 1024 with
    sides of at most 400 becomes 3 blocks of 342, not 400 + 400 + 224."""
    blocks = math.ceil(n / side)
    return math.ceil(n / blocks)


def choose_tile(
    n_q: int,
    n_k: int,
    d_k: int,
    d_v: int,
    itemsize: int,
    heads: int = 1,
    budget_bytes: int | None = None,
    side: int | None = None,
) -> Tile:
    """The tile of scores that fits ``budget_bytes`` (default: half of L2).

    Square tiles (``rows == cols``) as large as the budget allows for one
    head; a short side (few queries or few keys) lets the other grow; when
    one head's whole tile is smaller than the budget, several heads share a
    step, so that small problems do not pay the fixed cost of a numpy call
    per head. Sides are never below :data:`MIN_SIDE` (unless n is) and never
    above n. A given ``side`` fixes both sides (at most n); the heads per
    step are still chosen from the budget.

    Examples
    --------
    >>> choose_tile(1024, 1024, 64, 64, itemsize=4, heads=16, budget_bytes=1 << 20)
    Tile(rows=342, cols=342, heads=1)
    >>> choose_tile(8, 8, 4, 4, itemsize=8, heads=100, budget_bytes=1 << 20)
    Tile(rows=8, cols=8, heads=100)
    """
    budget = tile_budget_bytes() if budget_bytes is None else budget_bytes
    n_q, n_k = max(n_q, 1), max(n_k, 1)
    if side is not None:
        rows, cols = min(side, n_q), min(side, n_k)
        per_head = _working_set(rows, cols, d_k, d_v, itemsize)
        return Tile(rows, cols, max(1, min(heads, budget // per_head)))
    # The largest square side whose working set fits: s^2 + s*(2 d_k + 2 d_v) <= budget/itemsize.
    b = d_k + d_v
    side = int(math.isqrt(b * b + budget // itemsize) - b)
    side = max(side, MIN_SIDE)
    rows, cols = min(side, n_q), min(side, n_k)
    # A short side leaves room: let the other side grow into it.
    while rows < n_q and _working_set(rows * 2, cols, d_k, d_v, itemsize) <= budget:
        rows = min(rows * 2, n_q)
    while cols < n_k and _working_set(rows, cols * 2, d_k, d_v, itemsize) <= budget:
        cols = min(cols * 2, n_k)
    rows, cols = _balanced(n_q, rows), _balanced(n_k, cols)
    per_head = _working_set(rows, cols, d_k, d_v, itemsize)
    group = max(1, min(heads, budget // per_head))
    return Tile(rows, cols, group)


def tile_steps(n_q: int, n_k: int, tile: Tile, is_causal: bool) -> Iterator[tuple[slice, list[slice]]]:
    """The tiles blocked attention computes: each block of queries, with the blocks of keys it reads.

    Blocks of ``tile.rows`` queries, each with blocks of ``tile.cols`` keys.
    Under the causal mask query i reads keys 0..i, so a block of queries that
    ends before query ``i1`` reads no key from ``i1`` on: the tiles wholly in
    its future are left out, and its last block of keys stops at ``i1``.

    Examples
    --------
    >>> for queries, keys in tile_steps(4, 4, Tile(2, 2, 1), is_causal=True):
    ...     print(queries, keys)
    slice(0, 2, None) [slice(0, 2, None)]
    slice(2, 4, None) [slice(0, 2, None), slice(2, 4, None)]
    """
    for i0 in range(0, n_q, tile.rows):
        i1 = min(i0 + tile.rows, n_q)
        n_seen = min(n_k, i1) if is_causal else n_k
        yield slice(i0, i1), [slice(j0, min(j0 + tile.cols, n_seen)) for j0 in range(0, n_seen, tile.cols)]
