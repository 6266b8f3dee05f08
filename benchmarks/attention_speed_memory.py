"""Time and memory of lib's reference attention and its blocked attention.

Three measurements, all taken in one run so that their ratios compare like
with like:

1. speed: the reference (``lib.scaled_dot_product_attention``) and the
   blocked attention (``lib.blocked_attention``) on float32 inputs of shape
   (16, 1024, 64) (batch x heads = 16, n = 1024, d = 64), against the time of
   their two matrix products alone, ``Q K^T`` and ``P V``: the floor that no
   implementation built on these products can beat;
2. memory: the peak extra memory (beyond the inputs and the output) of both,
   one head, d = 64, for n from 1024 to 16384, each measured in a fresh
   subprocess with tracemalloc (numpy reports its arrays to it) and, as a
   cross-check, with the growth of the process's peak resident memory;
3. where PyTorch is installed, ``torch.nn.functional.scaled_dot_product_attention``
   on the CPU on the same inputs, side by side. PyTorch is optional and not
   a dependency of the course; without it this part is skipped;
4. the passes of the formula as written: each of its passes over the whole
   score matrix (scale, max, subtract, exp, sum, divide) and its two
   products, timed alone with plain numpy; and the same elementwise passes
   over one cache-sized tile, repeated until they have covered as many scores;
5. the tile-size curve: blocked attention with tiles from 32 x 32 to the
   whole matrix, against the same floor, beside the tile chosen from the cache,
   each on its shift-free path and on its shifted path (``always_shift``):
   the size of the tile and the number of passes per tile, measured apart.

The machine's processor and cache sizes are recorded with the results.

Timings are the best of several repeats, taken in turns (one call of each
contender per round) so that a busy moment on the machine hurts all alike.

Run it from the repository root with the course's environment:

    .venv/bin/python benchmarks/attention_speed_memory.py           # about 3 minutes
    .venv/bin/python benchmarks/attention_speed_memory.py --quick   # about 1 minute

It prints a table and writes ``benchmarks/results/attention_speed_memory.json``,
which the chapter on the online softmax reads. It needs about 2 GiB of free
memory (the reference's score matrix at n = 16384 is 1 GiB). ``--quick``
takes fewer rounds and stops the memory sizes at n = 8192; the chapter reads
either. Run it when the machine is otherwise idle: the ratios compare times
taken in one run, but other work on the machine still blurs them. On a busy
machine, multi-threaded BLAS calls on small tiles can stall while their
threads wait for a core; ``OPENBLAS_NUM_THREADS=1`` in front of the command
gives steadier ratios there (the thread count is recorded with the results).
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

import lib  # noqa: E402
import lib.tiles  # noqa: E402

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


def best_times(calls: dict[str, Callable[[], object]], repeats: int, desc: str) -> dict[str, float]:
    """Best wall-clock time of each call over ``repeats`` rounds, taken in turns."""
    times = {name: float("inf") for name in calls}
    for call in calls.values():  # warm-up: first-touch memory, thread start-up
        call()
    for _ in tqdm(range(repeats), desc=desc, unit="round", leave=False):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name] = min(times[name], time.perf_counter() - start)
    return times


def measure_speed(shape: tuple[int, ...], repeats: int) -> dict:
    q, k, v = make_inputs(shape)
    kt = np.swapaxes(k, -1, -2)
    p = lib.softmax(q @ kt * np.float32(1 / np.sqrt(shape[-1])))
    calls = {
        "qk_matmul": lambda: q @ kt,
        "pv_matmul": lambda: p @ v,
        "reference": attention_function("reference", q, k, v),
        "blocked": attention_function("blocked", q, k, v),
        "reference_causal": attention_function("reference", q, k, v, True),
        "blocked_causal": attention_function("blocked", q, k, v, True),
    }
    if torch is not None:
        calls["torch"] = attention_function("torch", q, k, v)
        calls["torch_causal"] = attention_function("torch", q, k, v, True)
    seconds = best_times(calls, repeats, "speed")
    seconds["matmul_floor"] = seconds["qk_matmul"] + seconds["pv_matmul"]
    contenders = [name for name in seconds if name not in ("qk_matmul", "pv_matmul", "matmul_floor")]
    tile = lib.tiles.choose_tile(shape[-2], shape[-2], shape[-1], shape[-1], 4, heads=_heads(shape))
    result = {
        "shape": list(shape),
        "dtype": "float32",
        "tile": tile._asdict(),
        "repeats": repeats,
        "seconds": seconds,
        "ratio_to_matmul_floor": {name: seconds[name] / seconds["matmul_floor"] for name in contenders},
    }
    if torch is not None:
        result["ratio_to_torch"] = {
            name: seconds[name] / seconds["torch_causal" if name.endswith("_causal") else "torch"]
            for name in contenders
        }
    return result


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


def measure_passes(shape: tuple[int, ...], repeats: int) -> dict:
    """The formula's passes over the whole score matrix, and the same passes in cache.

    ``whole``: each pass over the whole score matrix (heads x n x n), as the
    formula writes it. ``tiled``: the same pass over one tile of the size
    blocked attention chooses from the cache, repeated until it has covered
    as many scores, so the two columns compare the same work. (Each pass
    writes a buffer beside its input, so the tiled passes use two tiles of
    cache.)
    """
    q, k, v = make_inputs(shape)
    factor = np.float32(1 / np.sqrt(shape[-1]))
    s = q @ np.swapaxes(k, -1, -2)
    p = lib.softmax(s * factor)
    tile = lib.tiles.choose_tile(shape[-2], shape[-2], shape[-1], shape[-1], 4, heads=_heads(shape))
    t = s[: tile.heads, : tile.rows, : tile.cols].copy()  # shape is (heads, n, d)
    copies = max(1, round(s.size / t.size))
    whole_calls = elementwise_passes(s, factor)
    tile_calls = elementwise_passes(t, factor)
    calls: dict[str, Callable[[], object]] = {
        "qk_matmul": lambda: q @ np.swapaxes(k, -1, -2),
        "pv_matmul": lambda: p @ v,
    }
    for name in PASSES:
        calls[f"{name}"] = whole_calls[name]
        calls[f"{name}_tiled"] = functools.partial(_repeated, tile_calls[name], copies)
    seconds = best_times(calls, repeats, "passes")
    return {
        "shape": list(shape),
        "tile": tile._asdict(),
        "tile_bytes": int(t.nbytes),
        "score_matrix_bytes": int(s.nbytes),
        "tiles_per_matrix": copies,
        "seconds": {
            "products": {"qk_matmul": seconds["qk_matmul"], "pv_matmul": seconds["pv_matmul"]},
            "whole": {name: seconds[name] for name in PASSES},
            # Scaled to as many scores as the whole matrix holds (copies x tile
            # is within half a tile of it).
            "tiled": {name: seconds[f"{name}_tiled"] * s.size / (copies * t.size) for name in PASSES},
        },
    }


def measure_tile_curve(shape: tuple[int, ...], repeats: int, sides: tuple[int, ...]) -> dict:
    """Blocked attention's time for tiles of several sides, against the floor.

    Each tile is timed twice: on the shift-free path (one elementwise pass
    per tile, ``exp``; the path these inputs take) and on the shifted path
    (``always_shift=True``: maximum, subtraction, ``exp`` and sum per tile,
    and the rescaling), so that the effect of the tile's size and the effect
    of the number of passes can be told apart.
    """
    q, k, v = make_inputs(shape)
    kt = np.swapaxes(k, -1, -2)
    p = lib.softmax(q @ kt * np.float32(1 / np.sqrt(shape[-1])))
    calls: dict[str, Callable[[], object]] = {"qk_matmul": lambda: q @ kt, "pv_matmul": lambda: p @ v}
    names = ("chosen", *map(str, sides))
    for name in names:
        side = None if name == "chosen" else int(name)
        for path, always_shift in PATHS.items():
            calls[f"{name}/{path}"] = functools.partial(
                lib.blocked_attention, q, k, v, block_size=side, always_shift=always_shift
            )
    seconds = best_times(calls, repeats, "tile sizes")
    floor = seconds["qk_matmul"] + seconds["pv_matmul"]
    n, d, heads = shape[-2], shape[-1], _heads(shape)
    points = []
    for name in names:
        tile = lib.tiles.choose_tile(n, n, d, d, 4, heads=heads, side=None if name == "chosen" else int(name))
        point: dict[str, Any] = {
            "side": name,
            "tile": tile._asdict(),
            "tile_bytes": tile.heads * tile.rows * tile.cols * 4,
        }
        for path in PATHS:
            point[path] = {
                "seconds": seconds[f"{name}/{path}"],
                "ratio_to_matmul_floor": seconds[f"{name}/{path}"] / floor,
            }
        points.append(point)
    return {"shape": list(shape), "matmul_floor_seconds": floor, "points": points}


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
        "caches": lib.tiles.cache_sizes(),
        "tile_budget_bytes": lib.tiles.tile_budget_bytes(),
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


def print_table(results: dict) -> None:
    speed = results["speed"]
    s, r = speed["seconds"], speed["ratio_to_matmul_floor"]
    shape = "x".join(map(str, speed["shape"]))
    tile = speed["tile"]
    print(
        f"\n1. speed, float32 {shape}, best of {speed['repeats']} "
        f"(tiles of {tile['rows']} x {tile['cols']} scores, {tile['heads']} head(s) a step)"
    )
    print(f"   {'':22s}{'ms':>9s}{'x floor':>9s}" + (f"{'x torch':>9s}" if "ratio_to_torch" in speed else ""))
    for name in ("qk_matmul", "pv_matmul", "matmul_floor"):
        print(f"   {name:22s}{s[name] * 1e3:9.1f}")
    for name in r:
        extra = f"{speed['ratio_to_torch'][name]:9.2f}" if "ratio_to_torch" in speed else ""
        print(f"   {name:22s}{s[name] * 1e3:9.1f}{r[name]:9.2f}{extra}")
    memory = results["memory"]
    print(f"\n2. one head, d = {memory['d']}, float32: time and extra memory (beyond inputs and output)")
    print(f"   {'impl':10s}{'n':>7s}{'s':>9s}{'traced MiB':>12s}{'RSS MiB':>10s}")
    for c in memory["cases"]:
        traced = "-" if c["traced_extra_bytes"] is None else f"{c['traced_extra_bytes'] / 2**20:.1f}"
        rss = "-" if c["rss_extra_bytes"] is None else f"{c['rss_extra_bytes'] / 2**20:.1f}"
        print(f"   {c['impl']:10s}{c['n']:7d}{c['seconds']:9.3f}{traced:>12s}{rss:>10s}")
    for n, ratio in memory["summary"].items():
        print(
            f"   n = {n}: blocked / reference extra memory = 1/{1 / ratio['blocked_over_reference_extra_memory']:.0f}"
        )
    passes = results["passes"]
    caches = ", ".join(f"{key} {val / 2**10:.0f} KiB" for key, val in results["machine"]["caches"].items()) or "unknown"
    print(
        f"\n4. the formula's passes over its {passes['score_matrix_bytes'] / 2**20:.0f} MiB score matrix, "
        f"and the same passes over {passes['tiles_per_matrix']} tiles of {passes['tile_bytes'] / 2**10:.0f} KiB "
        f"(caches: {caches})"
    )
    print(f"   {'pass':12s}{'whole ms':>10s}{'tiled ms':>10s}")
    for name, sec in passes["seconds"]["products"].items():
        print(f"   {name:12s}{sec * 1e3:10.1f}")
    for name in PASSES:
        whole, tiled = passes["seconds"]["whole"][name], passes["seconds"]["tiled"][name]
        print(f"   {name:12s}{whole * 1e3:10.1f}{tiled * 1e3:10.1f}")
    curve = results["tile_curve"]
    print("\n5. blocked attention against the tile side (same shape, same floor), on both paths")
    print(f"   {'side':8s}{'tile':>16s}{'KiB':>9s}{'shift-free':>12s}{'shifted':>10s}  (x floor)")
    for point in curve["points"]:
        tile = point["tile"]
        print(
            f"   {point['side']:8s}{tile['heads']:>5d} x {tile['rows']:>4d} x {tile['cols']:<4d}"
            f"{point['tile_bytes'] / 2**10:9.0f}{point['shift_free']['ratio_to_matmul_floor']:12.2f}"
            f"{point['shifted']['ratio_to_matmul_floor']:10.2f}"
        )
    print()
    if results["machine"]["torch"] is None:
        print("3. PyTorch is not installed: its comparison was skipped (it is optional).")
    else:
        print(
            f"3. PyTorch {results['machine']['torch']['version']} on the CPU, "
            f"{results['machine']['torch']['threads']} threads: see the x torch column and the torch rows."
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="rounds of the speed measurement (default 15)")
    parser.add_argument(
        "--quick", action="store_true", help="5 rounds, memory up to n = 8192 (about a minute instead of three)"
    )
    parser.add_argument("--speed-shape", type=int, nargs=3, default=SPEED_SHAPE, metavar=("B", "N", "D"))
    parser.add_argument("--memory-sizes", type=int, nargs="+", default=MEMORY_SIZES, metavar="N")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--memory-case", nargs=4, metavar=("IMPL", "N", "D", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.memory_case:  # the subprocess of one memory measurement
        impl, n, d, repeats = args.memory_case
        print(json.dumps(memory_case(impl, int(n), int(d), int(repeats))))
        return

    if torch is None:
        print("note: PyTorch is not installed; the comparison with it is skipped (it is optional).")
    if args.quick:
        args.repeats = min(args.repeats, 5)
        args.memory_sizes = [n for n in args.memory_sizes if n <= 8192] or args.memory_sizes
    started = time.time()
    shape = tuple(args.speed_shape)
    results: dict[str, Any] = {
        "generated_by": "benchmarks/attention_speed_memory.py",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "speed": measure_speed(shape, args.repeats),
        "passes": measure_passes(shape, args.repeats),
        "tile_curve": measure_tile_curve(shape, max(3, args.repeats // 2), CURVE_SIDES),
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
