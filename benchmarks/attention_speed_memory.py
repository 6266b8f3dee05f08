"""Time and memory of lib's blocked attention, beside the plain reference and the products both run.

Four measurements, all taken in one run so that their ratios compare like
with like. Every timing is repeated for several rounds, taken in turns (one
call of each contender per round) so that a busy moment on the machine hurts
all alike; the results keep every round's time, and give the median and the
interquartile range (the middle half of the rounds) of each time and of each
ratio (taken round by round, each from calls of the same round).

1. speed: blocked attention (``lib.blocked_attention``) and the reference
   (``lib.scaled_dot_product_attention``, the formula computed on the whole
   score matrix) on float32 inputs of shape (16, 1024, 64) (batch x heads =
   16, n = 1024, d = 64), each against the time of the two matrix products
   ``Q K^T`` and ``P V`` run the way it runs them: the reference on the whole
   matrices, blocked attention tile by tile (``tiles.tile_steps``, the
   tiles it computes, causal or not) with nothing between the products. The
   products' time is a yardstick measured on the same machine, not a bound;
   where PyTorch is installed, ``torch.nn.functional.scaled_dot_product_attention``
   on the CPU on the same inputs too (PyTorch is optional and not a
   dependency of the course);
2. the passes of the formula as written: each of its elementwise passes over
   the whole score matrix (scale, max, subtract, exp, sum, divide), timed
   alone with plain numpy, and the same pass over one cache-sized tile,
   repeated until it has covered as many scores: a pass that runs much faster
   on data in the cache was waiting for memory;
3. the tile-size curve: blocked attention with tiles from 32 x 32 to the
   whole matrix (and the tile chosen from the cache, if it is not among
   them), each on its shift-free path (one pass per tile) and on its shifted
   path (``always_shift``: four passes per tile), and its products alone at
   each tile: the size of the tile and the number of passes per tile,
   measured apart;
4. memory: the peak extra memory (beyond the inputs and the output) of the
   reference and of blocked attention, one head, d = 64, for n from 1024 to
   16384, each measured in a fresh subprocess with tracemalloc (numpy reports
   its arrays to it) and, as a cross-check, with the growth of the process's
   peak resident memory.

The machine's processor and cache sizes are recorded with the results.

Run it from the repository root with the course's environment:

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/attention_speed_memory.py           # one to two minutes
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/attention_speed_memory.py --quick   # under a minute

It prints a table and writes ``benchmarks/results/attention_speed_memory.json``,
which the chapter on the online softmax reads (then run
``benchmarks/results_page.py`` for the benchmark page). It needs about 2 GiB
of free memory (the reference's score matrix at n = 16384 is 1 GiB).
``--quick`` takes 5 rounds and stops the memory sizes at n = 8192; the
chapter reads either. The ratios compare times taken in one run, but other
work on the machine still blurs them: the interquartile ranges say by how
much. On a busy machine, multi-threaded BLAS calls on small tiles can stall
while their threads wait for a core; ``OPENBLAS_NUM_THREADS=1`` gives
steadier ratios (the thread count is recorded with the results).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing the course

from sdpa_course import lib  # noqa: E402
from sdpa_course.lib import tiles  # noqa: E402

try:
    import torch
except ImportError:  # PyTorch is optional
    torch = None

RESULTS = ROOT / "benchmarks" / "results" / "attention_speed_memory.json"
SPEED_SHAPE = (16, 1024, 64)
MEMORY_SIZES = (1024, 2048, 4096, 8192, 16384)
D = 64
IMPLS = ("reference", "blocked", "torch")
CURVE_SIDES = (32, 64, 128, 256, 512, 1024)
PASSES = ("scale", "max", "subtract", "exp", "sum", "divide")
PATHS = {"shift_free": False, "shifted": True}  # blocked attention's two paths: name -> always_shift


def make_inputs(shape: tuple[int, ...], seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape, dtype=np.float32) for _ in range(3))


def attention_function(
    impl: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, is_causal: bool = False
) -> Callable[[], object]:
    """A no-argument call of one implementation on fixed inputs."""
    if impl == "reference":
        return lambda: lib.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    if impl == "blocked":
        return lambda: lib.blocked_attention(q, k, v, is_causal=is_causal)
    if impl == "torch":
        # Views of the same memory, no copy. PyTorch's fused (flash) CPU
        # kernel wants 4-D (batch, heads, n, d) tensors; given 2-D or 3-D ones
        # it falls back to its plain path, which builds the whole matrix.
        tq, tk, tv = (torch.from_numpy(a)[(None,) * (4 - a.ndim)] for a in (q, k, v))

        def call():
            with torch.inference_mode():
                return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=is_causal)

        return call
    raise ValueError(f"unknown implementation {impl!r}; expected one of {IMPLS}")


def _repeated(call: Callable[[], object], times: int) -> list[object]:
    """Call ``call`` ``times`` times (the passes over one tile, as often as the whole matrix holds tiles)."""
    return [call() for _ in range(times)]


def round_times(calls: dict[str, Callable[[], object]], rounds: int, desc: str) -> dict[str, list[float]]:
    """Every round's wall-clock time of each call, the calls taken in turns within a round."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():  # warm-up: first-touch memory, thread start-up
        call()
    for _ in tqdm(range(rounds), desc=desc, unit="round", leave=False):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return times


def spread(values: list[float]) -> dict[str, float]:
    """The median and the quartiles (the middle half lies between q1 and q3) of ``values``."""
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return {"median": float(median), "q1": float(q1), "q3": float(q3)}


def ratio(times: dict[str, list[float]], of: str, over: str) -> dict[str, Any]:
    """``of`` over ``over``, round by round (each from calls of one round), and the spread of those ratios."""
    return {"of": of, "over": over, **spread([a / b for a, b in zip(times[of], times[over])])}


def summary(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {name: spread(values) for name, values in times.items()}


def tiled_products(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, tile: tiles.Tile, is_causal: bool
) -> list[tuple[int, int]]:
    """blocked attention's two products alone, run the way it runs them; returns the tiles' shapes.

    The same tiles (``tiles.tile_steps``), the same groups of heads and
    the same shapes: a block of scaled queries times a tile of keys, then the
    tile times the values with a column of ones (the row sums of the
    shift-free path), added into the block's accumulator. Nothing happens
    between the two products: no mask, no ``exp``. ``q``, ``k`` and ``v``
    have one leading (heads) dimension.
    """
    n_q, n_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    k_t = np.swapaxes(k, -1, -2)
    v_ones = np.ones((*v.shape[:-1], d_v + 1), dtype=v.dtype)
    v_ones[..., :d_v] = v
    factor = np.float32(1 / np.sqrt(q.shape[-1]))
    steps = list(tiles.tile_steps(n_q, n_k, tile, is_causal))
    shapes = []
    for h0 in range(0, q.shape[0], tile.heads):
        heads = slice(h0, h0 + tile.heads)
        for queries, keys in steps:
            q_block = q[heads, queries] * factor
            acc = None
            for cols in keys:
                s = q_block @ k_t[heads, :, cols]
                shapes.append(s.shape[-2:])
                if acc is None:
                    acc = s @ v_ones[heads, cols]
                else:
                    acc += s @ v_ones[heads, cols]
    return shapes


def chosen_tile(shape: tuple[int, ...], side: int | None = None) -> tiles.Tile:
    """The tile blocked attention takes for ``shape`` (heads, n, d), from the cache, or of ``side``."""
    return tiles.choose_tile(shape[-2], shape[-2], shape[-1], shape[-1], 4, heads=_heads(shape), side=side)


def measure_speed(shape: tuple[int, ...], rounds: int) -> dict:
    q, k, v = make_inputs(shape)
    kt = np.swapaxes(k, -1, -2)
    p = lib.softmax(q @ kt * np.float32(1 / np.sqrt(shape[-1])))
    tile = chosen_tile(shape)
    calls = {
        "qk_whole": lambda: q @ kt,
        "pv_whole": lambda: p @ v,
        "products_tiled": lambda: tiled_products(q, k, v, tile, False),
        "products_tiled_causal": lambda: tiled_products(q, k, v, tile, True),
        "reference": attention_function("reference", q, k, v),
        "blocked": attention_function("blocked", q, k, v),
        "reference_causal": attention_function("reference", q, k, v, True),
        "blocked_causal": attention_function("blocked", q, k, v, True),
    }
    if torch is not None:
        calls["torch"] = attention_function("torch", q, k, v)
        calls["torch_causal"] = attention_function("torch", q, k, v, True)
    times = round_times(calls, rounds, "speed")
    # The reference's products: Q K^T and P V on the whole matrices, timed in the same round.
    times["products_whole"] = [a + b for a, b in zip(times["qk_whole"], times["pv_whole"])]
    ratios = {
        # Each implementation against its own products, run the way it runs them.
        "reference": ratio(times, "reference", "products_whole"),
        "reference_causal": ratio(times, "reference_causal", "products_whole"),
        "blocked": ratio(times, "blocked", "products_tiled"),
        "blocked_causal": ratio(times, "blocked_causal", "products_tiled_causal"),
        # Everything against one yardstick: the whole products, computed in full.
        "blocked_over_products_whole": ratio(times, "blocked", "products_whole"),
        "blocked_causal_over_products_whole": ratio(times, "blocked_causal", "products_whole"),
        "products_tiled_over_products_whole": ratio(times, "products_tiled", "products_whole"),
        "products_tiled_causal_over_products_whole": ratio(times, "products_tiled_causal", "products_whole"),
        "blocked_over_reference": ratio(times, "blocked", "reference"),
        "blocked_causal_over_reference_causal": ratio(times, "blocked_causal", "reference_causal"),
    }
    if torch is not None:
        for name in ("torch", "torch_causal"):
            ratios[name] = ratio(times, name, "products_whole")
        ratios["blocked_over_torch"] = ratio(times, "blocked", "torch")
        ratios["blocked_causal_over_torch_causal"] = ratio(times, "blocked_causal", "torch_causal")
    return {
        "shape": list(shape),
        "dtype": "float32",
        "tile": tile._asdict(),
        "rounds": rounds,
        "seconds": times,
        "spread": summary(times),
        "ratios": ratios,
    }


def _heads(shape: tuple[int, ...]) -> int:
    heads = 1
    for size in shape[:-2]:
        heads *= size
    return heads


def elementwise_passes(raw: np.ndarray, factor: np.float32) -> dict[str, Callable[[], object]]:
    """The formula's passes between its two products, each alone, on ``raw`` scores.

    Each pass reads the array it would read in the formula (the raw
    scores, the scaled ones, the shifted ones or the exponentials), prepared
    once, and writes into a buffer of the same size: no pass changes its
    own input, so every round times the same work on the same values.
    """
    scaled = raw * factor
    row_max = scaled.max(axis=-1, keepdims=True)
    shifted = scaled - row_max
    exps = np.exp(shifted)
    row_sum = exps.sum(axis=-1, keepdims=True)
    buffer = np.empty_like(raw)
    return {
        "scale": lambda: np.multiply(raw, factor, out=buffer),
        "max": lambda: scaled.max(axis=-1, keepdims=True),
        "subtract": lambda: np.subtract(scaled, row_max, out=buffer),
        "exp": lambda: np.exp(shifted, out=buffer),
        "sum": lambda: exps.sum(axis=-1, keepdims=True),
        "divide": lambda: np.divide(exps, row_sum, out=buffer),
    }


def measure_passes(shape: tuple[int, ...], rounds: int) -> dict:
    """The formula's passes over the whole score matrix, and the same passes in cache.

    ``whole``: each pass over the whole score matrix (heads x n x n), as the
    formula writes it. ``tiled``: the same pass over one tile of the size
    blocked attention chooses from the cache, repeated until it has covered
    as many scores, so the two compare the same work. (Each pass writes a
    buffer beside its input, so the tiled passes use two tiles of cache.)
    """
    q, k, v = make_inputs(shape)
    factor = np.float32(1 / np.sqrt(shape[-1]))
    s = q @ np.swapaxes(k, -1, -2)
    p = lib.softmax(s * factor)
    tile = chosen_tile(shape)
    t = s[: tile.heads, : tile.rows, : tile.cols].copy()  # shape is (heads, n, d)
    copies = max(1, round(s.size / t.size))
    whole_calls = elementwise_passes(s, factor)
    tile_calls = elementwise_passes(t, factor)
    calls: dict[str, Callable[[], object]] = {
        "qk_whole": lambda: q @ np.swapaxes(k, -1, -2),
        "pv_whole": lambda: p @ v,
    }
    for name in PASSES:
        calls[name] = whole_calls[name]
        calls[f"{name}_tiled"] = functools.partial(_repeated, tile_calls[name], copies)
    times = round_times(calls, rounds, "passes")
    for name in PASSES:
        # Scaled to as many scores as the whole matrix holds (copies x tile is within half a tile of it).
        times[f"{name}_tiled"] = [sec * s.size / (copies * t.size) for sec in times[f"{name}_tiled"]]
    times["products_whole"] = [a + b for a, b in zip(times["qk_whole"], times["pv_whole"])]
    times["all_passes"] = [sum(times[name][r] for name in PASSES) for r in range(rounds)]
    times["all_passes_tiled"] = [sum(times[f"{name}_tiled"][r] for name in PASSES) for r in range(rounds)]
    ratios = {f"{name}_whole_over_tiled": ratio(times, name, f"{name}_tiled") for name in (*PASSES, "all_passes")}
    ratios["all_passes_over_products_whole"] = ratio(times, "all_passes", "products_whole")
    ratios["exp_over_subtract"] = ratio(times, "exp", "subtract")
    ratios["exp_over_subtract_tiled"] = ratio(times, "exp_tiled", "subtract_tiled")
    return {
        "shape": list(shape),
        "tile": tile._asdict(),
        "tile_bytes": int(t.nbytes),
        "score_matrix_bytes": int(s.nbytes),
        "tiles_per_matrix": copies,
        "rounds": rounds,
        "seconds": times,
        "spread": summary(times),
        "ratios": ratios,
    }


def measure_tile_curve(shape: tuple[int, ...], rounds: int, sides: tuple[int, ...]) -> dict:
    """Blocked attention's time for tiles of several sides, on both paths, and its products alone.

    Each tile is timed three times per round: on the shift-free path (one
    elementwise pass per tile, ``exp``; the path these inputs take), on the
    shifted path (``always_shift=True``: maximum, subtraction, ``exp`` and
    sum per tile, and the rescaling), and its two products alone at that
    tile. The tile chosen from the cache is one of the sides when it is a
    square of one of them; otherwise it is timed as one more point.
    """
    q, k, v = make_inputs(shape)
    kt = np.swapaxes(k, -1, -2)
    p = lib.softmax(q @ kt * np.float32(1 / np.sqrt(shape[-1])))
    tiles = {str(side): chosen_tile(shape, side) for side in sides}
    chosen = chosen_tile(shape)
    chosen_name = next((name for name, tile in tiles.items() if tile == chosen), "chosen")
    if chosen_name == "chosen":
        tiles["chosen"] = chosen
    calls: dict[str, Callable[[], object]] = {"qk_whole": lambda: q @ kt, "pv_whole": lambda: p @ v}
    for name, tile in tiles.items():
        side = None if name == "chosen" else int(name)
        for path, always_shift in PATHS.items():
            calls[f"{name}/{path}"] = functools.partial(
                lib.blocked_attention, q, k, v, block_size=side, always_shift=always_shift
            )
        calls[f"{name}/products"] = functools.partial(tiled_products, q, k, v, tile, False)
    times = round_times(calls, rounds, "tile sizes")
    times["products_whole"] = [a + b for a, b in zip(times["qk_whole"], times["pv_whole"])]
    whole = str(shape[-2])  # one tile a side: the whole matrix of each head
    points = []
    for name, tile in sorted(tiles.items(), key=lambda item: item[1].rows):
        point: dict[str, Any] = {
            "side": name,
            "chosen": name == chosen_name,
            "tile": tile._asdict(),
            "tile_bytes": tile.heads * tile.rows * tile.cols * 4,
            "ratios": {
                "passes": ratio(times, f"{name}/shifted", f"{name}/shift_free"),
                **{f"{path}_over_products": ratio(times, f"{name}/{path}", f"{name}/products") for path in PATHS},
                **{
                    f"{path}_over_products_whole": ratio(times, f"{name}/{path}", "products_whole")
                    for path in (*PATHS, "products")
                },
            },
        }
        if whole in tiles:
            point["ratios"]["whole_tile_over_this"] = {
                path: ratio(times, f"{whole}/{path}", f"{name}/{path}") for path in (*PATHS, "products")
            }
        points.append(point)
    return {
        "shape": list(shape),
        "rounds": rounds,
        "whole_tile_side": whole if whole in tiles else None,
        "seconds": times,
        "spread": summary(times),
        "points": points,
    }


def _status_bytes(field: str) -> int | None:
    """A size from /proc/self/status (Linux), e.g. VmRSS (now) or VmHWM (peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Make the kernel's resident peak (VmHWM) start again from now (Linux 4.0+)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def memory_case(impl: str, n: int, d: int, repeats: int) -> dict:
    """Run in a fresh subprocess: peak extra memory of one call, then its time.

    Memory comes first, while the process has freed nothing that the
    allocator could reuse.
    """
    q, k, v = make_inputs((n, d))
    call = attention_function(impl, q, k, v)
    output_bytes = n * d * 4
    can_reset = _reset_peak_rss()
    rss_before = _status_bytes("VmRSS")
    tracemalloc.start()
    out = call()
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_peak = _status_bytes("VmHWM")
    del out
    rss_extra = None
    if can_reset and rss_before is not None and rss_peak is not None:
        rss_extra = max(0, rss_peak - rss_before - output_bytes)
    return {
        "impl": impl,
        "n": n,
        "d": d,
        # tracemalloc sees numpy's arrays (not PyTorch's): its peak counts
        # everything allocated during the call, the output included.
        "traced_extra_bytes": traced_peak - output_bytes if impl != "torch" else None,
        # Growth of the process's resident peak: coarser (whole pages, and
        # the allocator's own bookkeeping), but it sees every allocator.
        "rss_extra_bytes": rss_extra,
        "seconds": min(_timed(call) for _ in range(repeats)),
    }


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure_memory(sizes: tuple[int, ...], d: int) -> dict:
    impls = [i for i in IMPLS if i != "torch" or torch is not None]
    cases = []
    jobs = [(impl, n) for n in sizes for impl in impls]
    for impl, n in tqdm(jobs, desc="memory", unit="case"):
        repeats = 5 if n <= 4096 else 3
        cmd = [sys.executable, __file__, "--memory-case", impl, str(n), str(d), str(repeats)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        cases.append(json.loads(done.stdout.strip().splitlines()[-1]))
    summary = {}
    for n in sizes:
        by = {c["impl"]: c for c in cases if c["n"] == n}
        ref, blk = by["reference"]["traced_extra_bytes"], by["blocked"]["traced_extra_bytes"]
        summary[str(n)] = {"blocked_over_reference_extra_memory": blk / ref}
    return {"d": d, "dtype": "float32", "heads": 1, "cases": cases, "summary": summary}


def machine() -> dict:
    info: dict[str, Any] = {
        "processor": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "system": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "environment": {key: val for key, val in os.environ.items() if key.startswith(("OPENBLAS_", "OMP_", "MKL_"))},
        "torch": None if torch is None else {"version": torch.__version__, "threads": torch.get_num_threads()},
        "caches": tiles.cache_sizes(),
        "tile_budget_bytes": tiles.tile_budget_bytes(),
    }
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        info["threadpools"] = "threadpoolctl not installed"
    else:
        info["threadpools"] = [
            {key: pool.get(key) for key in ("internal_api", "version", "num_threads", "architecture")}
            for pool in threadpool_info()
        ]
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _blas() -> str:
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # the layout of numpy's build information is not an API
        return "unknown"


def _cells(r: dict[str, float]) -> str:
    return f"{r['median']:9.2f} ({r['q1']:.2f}-{r['q3']:.2f})"


def print_table(results: dict) -> None:
    speed = results["speed"]
    spread_ms = speed["spread"]
    shape = "x".join(map(str, speed["shape"]))
    tile = speed["tile"]
    print(
        f"\n1. speed, float32 {shape}, median (interquartile range) of {speed['rounds']} rounds "
        f"(tiles of {tile['rows']} x {tile['cols']} scores, {tile['heads']} head(s) a step)"
    )
    for name, r in spread_ms.items():
        print(f"   {name:28s}{r['median'] * 1e3:9.1f} ms ({r['q1'] * 1e3:.1f}-{r['q3'] * 1e3:.1f})")
    print("   ratios, round by round:")
    for r in speed["ratios"].values():
        print(f"   {r['of']:>22s} / {r['over']:22s}{_cells(r)}")
    memory = results["memory"]
    print(f"\n2. one head, d = {memory['d']}, float32: time and extra memory (beyond inputs and output)")
    print(f"   {'impl':10s}{'n':>7s}{'s':>9s}{'traced MiB':>12s}{'RSS MiB':>10s}")
    for c in memory["cases"]:
        traced = "-" if c["traced_extra_bytes"] is None else f"{c['traced_extra_bytes'] / 2**20:.1f}"
        rss = "-" if c["rss_extra_bytes"] is None else f"{c['rss_extra_bytes'] / 2**20:.1f}"
        print(f"   {c['impl']:10s}{c['n']:7d}{c['seconds']:9.3f}{traced:>12s}{rss:>10s}")
    for n, share in memory["summary"].items():
        print(
            f"   n = {n}: blocked / reference extra memory = 1/{1 / share['blocked_over_reference_extra_memory']:.0f}"
        )
    passes = results["passes"]
    caches = ", ".join(f"{key} {val / 2**10:.0f} KiB" for key, val in results["machine"]["caches"].items()) or "unknown"
    print(
        f"\n4. the formula's passes over its {passes['score_matrix_bytes'] / 2**20:.0f} MiB score matrix, "
        f"and the same passes over {passes['tiles_per_matrix']} tiles of {passes['tile_bytes'] / 2**10:.0f} KiB "
        f"(caches: {caches}); medians"
    )
    print(f"   {'pass':12s}{'whole ms':>10s}{'tiled ms':>10s}   whole / tiled (IQR)")
    for name in PASSES:
        whole, tiled = passes["spread"][name]["median"], passes["spread"][f"{name}_tiled"]["median"]
        print(
            f"   {name:12s}{whole * 1e3:10.1f}{tiled * 1e3:10.1f}{_cells(passes['ratios'][f'{name}_whole_over_tiled'])}"
        )
    curve = results["tile_curve"]
    print("\n5. blocked attention against the tile side, over its own products at that tile (median, IQR)")
    print(f"   {'side':8s}{'tile':>16s}{'KiB':>7s}{'shift-free':>24s}{'shifted':>24s}{'shifted/shift-free':>24s}")
    for point in curve["points"]:
        tile, r = point["tile"], point["ratios"]
        print(
            f"   {point['side'] + ('*' if point['chosen'] else ''):8s}"
            f"{tile['heads']:>5d} x {tile['rows']:>4d} x {tile['cols']:<4d}{point['tile_bytes'] / 2**10:7.0f}"
            f"{_cells(r['shift_free_over_products']):>24s}{_cells(r['shifted_over_products']):>24s}"
            f"{_cells(r['passes']):>24s}"
        )
    print("   (* the tile chosen from the cache)")
    print()
    if results["machine"]["torch"] is None:
        print("3. PyTorch is not installed: its comparison was skipped (it is optional).")
    else:
        print(
            f"3. PyTorch {results['machine']['torch']['version']} on the CPU, "
            f"{results['machine']['torch']['threads']} threads: see the torch rows."
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds of every timing (default 15, at least 5)")
    parser.add_argument("--quick", action="store_true", help="5 rounds, memory up to n = 8192 (under a minute)")
    parser.add_argument("--speed-shape", type=int, nargs=3, default=SPEED_SHAPE, metavar=("B", "N", "D"))
    parser.add_argument("--memory-sizes", type=int, nargs="+", default=MEMORY_SIZES, metavar="N")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--memory-case", nargs=4, metavar=("IMPL", "N", "D", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.memory_case:  # the subprocess of one memory measurement
        impl, n, d, repeats = args.memory_case
        print(json.dumps(memory_case(impl, int(n), int(d), int(repeats))))
        return

    if args.rounds < 1:
        parser.error(f"--rounds must be 1 or more; got {args.rounds}")
    if torch is None:
        print("note: PyTorch is not installed; the comparison with it is skipped (it is optional).")
    if args.quick:
        args.rounds = min(args.rounds, 5)
        args.memory_sizes = [n for n in args.memory_sizes if n <= 8192] or args.memory_sizes
    started = time.time()
    shape = tuple(args.speed_shape)
    results: dict[str, Any] = {
        "generated_by": "benchmarks/attention_speed_memory.py",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "speed": measure_speed(shape, args.rounds),
        "passes": measure_passes(shape, args.rounds),
        "tile_curve": measure_tile_curve(shape, args.rounds, tuple(s for s in CURVE_SIDES if s <= shape[-2])),
        "memory": measure_memory(tuple(args.memory_sizes), args.speed_shape[2]),
    }
    results["quick"] = args.quick
    results["run_seconds"] = round(time.time() - started, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)
    print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")


if __name__ == "__main__":
    main()
