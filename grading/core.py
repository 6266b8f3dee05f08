"""The machinery that every homework check shares.

A check is three pieces, so that it can run whole inside a notebook or split
across processes (see the package docstring for the full picture):

1. ``Check.make_cases(seed)``: the inputs, as plain JSON data.
2. :func:`run_cases`: calls the learner's functions on those inputs and
   returns what they gave back, again as plain JSON data. It runs in the
   learner's process, needs only numpy (never ``lib``), and watches every call
   with :class:`CallWatch`, so a function that hands its work to the reference
   (``lib``, torch, scipy, ...) is caught however it reaches it.
3. ``Check.compare(cases, results)``: recomputes the expected values with
   ``lib`` and returns a :class:`Verdict`. It trusts nothing in ``results``
   beyond plain numbers, so it can run in another process than the learner's.

Plain data
----------
Values cross between the pieces as JSON: an array is
``{"array": {"dtype": "float32", "shape": [2, 3], "data": [...]}}`` with the
elements flattened in C order (``"inf"``, ``"-inf"`` and ``"nan"`` as strings,
so the JSON stays strict); a number is ``{"number": 1.5}``; also ``{"bool":
...}``, ``{"str": ...}``, ``{"none": true}``, ``{"tuple": [...]}``, ``{"list":
[...]}``, ``{"rng": seed}`` (an input only: a fresh
``numpy.random.default_rng(seed)``), and, for anything else a learner's
function returns, ``{"other": "<type name>"}``. float32 values survive the
round trip exactly.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import os
import secrets
import sys
import sysconfig
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Assignment",
    "CallWatch",
    "Check",
    "CheckFailed",
    "Mismatch",
    "Unsupported",
    "Verdict",
    "all_checks",
    "arg",
    "checks_for",
    "check_form",
    "compare_arrays",
    "decode",
    "encode",
    "get_check",
    "make_case",
    "run_cases",
    "value_of",
]

# --------------------------------------------------------------------------
# Plain data
# --------------------------------------------------------------------------

#: Largest array (in elements) that a learner's result may be, as plain data.
MAX_RESULT_SIZE = 1 << 20
_FLOAT_TYPES = (np.float16, np.float32, np.float64)
_SCALAR_TYPES = {
    np.dtype(t).type
    for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
} | set(_FLOAT_TYPES)


def _plain_float(x: float) -> float | str:
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _encode_array(arr: np.ndarray) -> dict:
    if arr.dtype.kind == "f":
        flat = arr.astype(np.float64).ravel().tolist()
        if not np.isfinite(arr).all():
            flat = [_plain_float(v) for v in flat]
    else:
        flat = arr.ravel().tolist()
    return {"array": {"dtype": arr.dtype.name, "shape": list(arr.shape), "data": flat}}


def encode(value: Any, _depth: int = 0) -> dict:
    """Turn a value into plain JSON data (see the module docstring).

    Only exact built-in and numpy types are read; anything else (a subclass,
    an object that pretends to be an array) becomes ``{"other": type name}``
    without any of its methods being called.

    >>> encode(np.array([1.0, -np.inf], dtype=np.float32))
    {'array': {'dtype': 'float32', 'shape': [2], 'data': [1.0, '-inf']}}
    >>> encode((1, 2.5))
    {'tuple': [{'number': 1}, {'number': 2.5}]}
    """
    kind = type(value)
    if kind is np.ndarray:
        if value.dtype.kind not in "biuf":
            return {"other": f"numpy array of dtype {value.dtype}"}
        if value.size > MAX_RESULT_SIZE:
            return {"other": f"numpy array of shape {value.shape}, too large"}
        return _encode_array(value)
    if kind in _SCALAR_TYPES:
        return {"array": {**_encode_array(np.asarray(value))["array"], "scalar": True}}
    if kind is bool:
        return {"bool": value}
    if kind is int:
        return {"number": value} if abs(value) < 2**53 else {"number": float(value)}
    if kind is float:
        return {"number": _plain_float(value)}
    if kind is str:
        return {"str": value[:1000]}
    if value is None:
        return {"none": True}
    if kind in (tuple, list) and _depth < 3 and len(value) <= 16:
        return {kind.__name__: [encode(v, _depth + 1) for v in value]}
    if kind in (tuple, list):
        return {"other": f"{kind.__name__} of {len(value)} items"}
    if isinstance(value, np.random.Generator) and kind is np.random.Generator:
        return {"other": "numpy.random.Generator"}
    return {"other": f"{kind.__module__}.{kind.__qualname__}"}


@dataclass(frozen=True)
class Unsupported:
    """A value that did not arrive as a number or an array: ``what`` names it."""

    what: str

    def __str__(self) -> str:
        return f"a {self.what}"


def _from_plain(x: Any) -> float:
    return float(x) if isinstance(x, str) else x


def decode(data: Any) -> Any:
    """The inverse of :func:`encode`; malformed data raises ``ValueError``.

    >>> decode(encode(np.array([[1, 2]], dtype=np.int32)))
    array([[1, 2]], dtype=int32)
    """
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError(f"not plain data: {str(data)[:80]}")
    ((tag, body),) = data.items()
    if tag == "array":
        dtype = np.dtype(body["dtype"])
        if dtype.kind not in "biuf":
            raise ValueError(f"unsupported dtype {dtype}")
        items = body["data"]
        if dtype.kind == "f":
            arr = np.array([_from_plain(v) for v in items], dtype=np.float64).astype(dtype)
        else:
            arr = np.array(items, dtype=dtype)
        arr = arr.reshape([int(n) for n in body["shape"]])
        return arr[()] if body.get("scalar") else arr
    if tag == "number":
        return _from_plain(body)
    if tag in ("bool", "str"):
        return body
    if tag == "none":
        return None
    if tag in ("tuple", "list"):
        items = [decode(v) for v in body]
        return tuple(items) if tag == "tuple" else items
    if tag == "rng":
        return np.random.default_rng(int(body))
    if tag == "other":
        return Unsupported(str(body))
    raise ValueError(f"unknown tag {tag!r}")


def arg(value: Any) -> dict:
    """Plain data for one input of a case (``rng=seed`` for a random generator)."""
    return encode(value)


def rng_arg(seed: int) -> dict:
    """Plain data that decodes to a fresh ``numpy.random.default_rng(seed)``."""
    return {"rng": int(seed)}


def make_case(call: str, *args: Any, label: str, count_lines: bool = False, **kwargs: Any) -> dict:
    """One input case: call the learner's function ``call`` with these arguments.

    Arguments that are already plain data (a dict from :func:`encode` or
    :func:`rng_arg`) are kept; anything else is encoded. ``label`` says in
    words what the case is; it is shown to the learner when the case fails.
    ``count_lines`` asks :func:`run_cases` to count the lines of learner code
    that the call executes (to tell a loop from a vectorized function).
    """
    enc = lambda v: v if isinstance(v, dict) else encode(v)  # noqa: E731
    return {
        "call": call,
        "args": [enc(a) for a in args],
        "kwargs": {k: enc(v) for k, v in kwargs.items()},
        "label": label,
        "count_lines": count_lines,
    }


def case_inputs(case: Mapping) -> tuple[list, dict]:
    """Decode a case's arguments (each call gets fresh arrays and generators)."""
    return [decode(a) for a in case["args"]], {k: decode(v) for k, v in case["kwargs"].items()}


# --------------------------------------------------------------------------
# Watching the learner's calls
# --------------------------------------------------------------------------

#: Top-level packages whose code a learner's function may not run: the
#: course's reference and graders, and libraries that ship an attention or a
#: softmax. numpy is allowed: it is what the exercises are written in.
FORBIDDEN_PACKAGES = ("lib", "grading", "torch", "scipy", "jax", "jaxlib", "tensorflow", "keras", "sklearn")
#: Packages whose use means work done where the watch cannot see it (another
#: thread or process) or an attempt to switch the watch off.
_HIDING_PACKAGES = ("multiprocessing", "concurrent", "subprocess", "_posixsubprocess", "queue", "_queue", "ctypes")
_HIDING_FUNCTIONS = {
    ("sys", "setprofile"), ("sys", "settrace"), ("sys", "_setprofileallthreads"),
    ("sys", "_settraceallthreads"), ("threading", "setprofile"), ("threading", "settrace"),
    ("threading", "setprofile_all_threads"), ("threading", "settrace_all_threads"),
    ("_thread", "start_new_thread"), ("_thread", "start_joinable_thread"), ("posix", "fork"),
    ("posix", "system"), ("posix", "posix_spawn"), ("posix", "posix_spawnp"), ("posix", "execv"),
    ("posix", "execve"), ("os", "fork"), ("os", "system"), ("os", "popen"), ("os", "execv"),
    ("os", "execve"), ("os", "execl"), ("os", "execvp"), ("os", "spawnv"), ("os", "posix_spawn"),
    ("threading", "start"), ("threading", "_start_new_thread"),
}


def _package_dir(name: str) -> str | None:
    """The folder of an installed top-level package, found without importing it."""
    mod = sys.modules.get(name)
    paths = getattr(mod, "__path__", None) if mod is not None else None
    if not paths:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        paths = spec.submodule_search_locations if spec is not None else None
    if not paths:
        return None
    return os.path.realpath(list(paths)[0]) + os.sep


#: numpy functions whose use is recorded (``record["calls"]``): the ways of
#: joining arrays, which homework 8 forbids for the blocks. (``np.vstack``,
#: ``np.hstack``, ``np.stack``, ``np.append`` and ``np.block`` all end in
#: ``concatenate``.)
NOTED_CALLS = frozenset({"concatenate"})
#: numpy's folder: its array-function dispatchers (the ``concatenate`` that
#: every joining function reaches) are Python functions there.
_NUMPY_DIR = os.path.dirname(np.__file__)

_GRADING_DIR = os.path.realpath(os.path.dirname(__file__)) + os.sep
_SYSTEM_DIRS = tuple(
    {os.path.realpath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
     if (p := sysconfig.get_paths().get(key))}
)


class CallWatch:
    """Record what a learner's function calls while it runs.

    Inside ``with CallWatch() as watch:`` every Python function call and every
    call of a C function is looked at (``sys.setprofile``, also for threads
    started meanwhile). A call is *forbidden* when the code it runs belongs to
    one of :data:`FORBIDDEN_PACKAGES`, by the file it was loaded from or by the
    module it was defined in, which catches the reference reached through an
    alias, a wrapper, ``np.vectorize``, an import inside the function or a
    copied code object. Starting threads or processes and switching the watch
    off are recorded too. ``watch.forbidden`` lists what was seen, e.g.
    ``["lib.softmax.softmax"]``.

    With ``count_lines=True`` it also counts the lines of learner code
    executed (``sys.settrace``), outside numpy and the standard library.
    """

    def __init__(self, *, count_lines: bool = False) -> None:
        self.count_lines = count_lines
        self.forbidden: list[str] = []
        #: Calls of the numpy functions in :data:`NOTED_CALLS` (rules such as
        #: "never concatenate the blocks" are judged from these).
        self.noted_calls: set[str] = set()
        self.lines = 0
        self._packages = {d: p for p in FORBIDDEN_PACKAGES + _HIDING_PACKAGES if (d := _package_dir(p))}
        self._packages[_GRADING_DIR] = "grading"
        self._dirs = tuple(d for d, p in self._packages.items() if p in FORBIDDEN_PACKAGES)
        self._hiding_dirs = tuple(d for d, p in self._packages.items() if p in _HIDING_PACKAGES)
        self._code_verdicts: dict[Any, str | None] = {}
        self._frame = None
        self._own = (CallWatch.__exit__.__code__,)
        self._hook = self._profile  # one bound method, so that `is` can recognise it

    # -- classification ------------------------------------------------------
    def _classify_code(self, frame) -> str | None:
        code = frame.f_code
        filename = os.path.realpath(code.co_filename) if code.co_filename[:1] not in "<" else code.co_filename
        module = frame.f_globals.get("__name__") or ""
        top = module.partition(".")[0] if isinstance(module, str) else ""
        qualname = getattr(code, "co_qualname", code.co_name)
        for folder, package in self._packages.items():
            if filename.startswith(folder):  # named by where the code was loaded from
                module = package + "." + filename[len(folder):].removesuffix(".py").replace(os.sep, ".")
                module = module.removesuffix(".__init__")
                top = package
                break
        name = f"{module}.{qualname}"
        if top in FORBIDDEN_PACKAGES or filename.startswith(self._dirs):
            return name
        if top in _HIDING_PACKAGES or filename.startswith(self._hiding_dirs):
            return name
        if top == "threading" and code.co_name in ("start", "_start_new_thread"):
            return name
        return None

    def _classify_c(self, func) -> str | None:
        module = getattr(func, "__module__", None)
        owner = getattr(func, "__self__", None)
        if not module and owner is not None:
            module = owner.__name__ if type(owner).__name__ == "module" else type(owner).__module__
        module = module if isinstance(module, str) else ""
        fname = getattr(func, "__name__", "?")
        top = module.partition(".")[0]
        if top in FORBIDDEN_PACKAGES or top in _HIDING_PACKAGES:
            return f"{module}.{fname}"
        if (top, fname) in _HIDING_FUNCTIONS or (module, fname) in _HIDING_FUNCTIONS:
            return f"{module}.{fname}"
        if fname.startswith(("exec", "spawn", "posix_spawn", "fork")) and top in ("os", "posix", "nt"):
            return f"{module}.{fname}"
        return None

    def _note(self, what: str) -> None:
        if what not in self.forbidden and len(self.forbidden) < 20:
            self.forbidden.append(what)

    # -- hooks ---------------------------------------------------------------
    def _profile(self, frame, event, arg):
        if frame.f_code in self._own:
            return
        if event == "call":
            code = frame.f_code
            if code.co_name in NOTED_CALLS and _NUMPY_DIR and code.co_filename.startswith(_NUMPY_DIR):
                self.noted_calls.add(f"np.{code.co_name}")
            try:
                verdict = self._code_verdicts[code]
            except KeyError:
                verdict = self._code_verdicts[code] = self._classify_code(frame)
            if verdict is not None:
                self._note(verdict)
        elif event == "c_call":
            if frame is self._frame:
                return
            name = getattr(arg, "__name__", None)
            if name in NOTED_CALLS:
                self.noted_calls.add(f"np.{name}")
            verdict = self._classify_c(arg)
            if verdict is not None:
                self._note(verdict)

    def _is_learner_code(self, code) -> bool:
        filename = code.co_filename
        if filename.startswith("<frozen"):
            return False
        real = os.path.realpath(filename) if not filename.startswith("<") else filename
        return not real.startswith(_SYSTEM_DIRS + self._dirs)

    def _trace(self, frame, event, arg):
        if event == "call" and frame is not self._frame and self._is_learner_code(frame.f_code):
            return self._trace_lines
        return None

    def _trace_lines(self, frame, event, arg):
        if event == "line":
            self.lines += 1
        return self._trace_lines

    # -- context manager -----------------------------------------------------
    def __enter__(self) -> CallWatch:
        self._saved = (sys.getprofile(), sys.gettrace(), threading.getprofile() if hasattr(threading, "getprofile") else None)
        self._frame = sys._getframe(1)
        threading.setprofile(self._hook)
        if self.count_lines:
            sys.settrace(self._trace)
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        current = sys.getprofile()
        sys.setprofile(self._saved[0])
        if current is not self._hook:
            self._note("sys.setprofile (the watch was switched off)")
        if self.count_lines:
            sys.settrace(self._saved[1])
        threading.setprofile(self._saved[2])


# --------------------------------------------------------------------------
# Running the learner's functions (the part that may run in a sandbox)
# --------------------------------------------------------------------------


def _learner_error(exc: BaseException) -> str:
    """``"ValueError: message (in f, line 3: return x @ y)"``, from the learner's frames."""
    text = str(exc)
    message = (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:600]
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__)
        if not os.path.realpath(f.filename).startswith(_GRADING_DIR)
    ]
    ours = [f for f in frames if not os.path.realpath(f.filename).startswith(_SYSTEM_DIRS)]
    where = (ours or frames)[-1:] if frames else []
    if where:
        f = where[0]
        line = (f.line or "").strip()
        message += f" (in {f.name}, line {f.lineno}" + (f": {line[:120]})" if line else ")")
    return message


def _bounded(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def call_learner(fn: Any, args: Sequence, kwargs: Mapping, *, count_lines: bool = False) -> dict:
    """Call ``fn(*args, **kwargs)`` under a :class:`CallWatch` and describe the outcome.

    Returns plain data: ``value`` (the encoded result, or None when it
    raised), ``error`` (None or the learner's exception as text),
    ``forbidden`` (calls it may not make), ``warnings`` and ``output`` (what
    it printed, captured so that a check cell never writes to stderr),
    ``lines`` (lines of learner code run, when counted) and ``seconds``.
    """
    record: dict[str, Any] = {"value": None, "error": None, "forbidden": [], "warnings": [], "calls": [],
                              "mutated": [], "output": "", "lines": None, "seconds": 0.0}
    if not callable(fn):
        record["error"] = f"TypeError: {type(fn).__name__} object is not callable"
        return record
    out = io.StringIO()
    before = _snapshots(args, kwargs)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(out):
        warnings.simplefilter("always")
        watch = CallWatch(count_lines=count_lines)
        try:
            with watch:
                value = fn(*args, **kwargs)
        except Exception as exc:  # the learner's error becomes part of the record
            record["error"] = _learner_error(exc)
        else:
            record["value"] = encode(value)
    record["seconds"] = round(time.perf_counter() - start, 6)
    record["forbidden"] = list(watch.forbidden)
    record["calls"] = sorted(watch.noted_calls)
    record["mutated"] = _changed(before, args, kwargs)
    record["warnings"] = [_bounded(f"{w.category.__name__}: {w.message}", 300) for w in caught[:5]]
    record["output"] = _bounded(out.getvalue())
    if count_lines:
        record["lines"] = watch.lines
    return record


def _snapshots(args: Sequence, kwargs: Mapping) -> dict[str, np.ndarray]:
    """Copies of the array inputs (also inside tuples and lists), by a name for the learner."""
    found: dict[str, np.ndarray] = {}

    def walk(value: Any, name: str, depth: int = 0) -> None:
        if type(value) is np.ndarray:
            found[name] = value.copy()
        elif type(value) in (tuple, list) and depth < 3:
            for i, item in enumerate(value):
                walk(item, f"{name}[{i}]", depth + 1)

    for i, a in enumerate(args, 1):
        walk(a, f"argument {i}")
    for key, a in kwargs.items():
        walk(a, key)
    return found


def _changed(before: dict[str, np.ndarray], args: Sequence, kwargs: Mapping) -> list[str]:
    """The names of array inputs whose contents the call changed (in place)."""
    after = _snapshots(args, kwargs)
    return [name for name, old in before.items()
            if name in after and not np.array_equal(old, after[name], equal_nan=old.dtype.kind == "f")][:5]


def run_cases(functions: Mapping[str, Any], cases: Iterable[Mapping]) -> list[dict]:
    """Piece (2): run the learner's functions on every case; plain data out.

    ``functions`` maps names to the learner's callables (e.g. a notebook's
    globals); a missing name is reported in the record, not raised. Needs
    numpy only, so it can run in a sandbox without ``lib``. The result is
    ``json.dumps``-able with ``allow_nan=False``.
    """
    results = []
    for case in cases:
        name = case["call"]
        if name not in functions:
            results.append({"value": None, "error": f"NameError: no function named {name!r} is defined",
                            "forbidden": [], "warnings": [], "calls": [], "mutated": [], "output": "",
                            "lines": None, "seconds": 0.0})
            continue
        args, kwargs = case_inputs(case)
        results.append(call_learner(functions[name], args, kwargs, count_lines=bool(case.get("count_lines"))))
    return results


# --------------------------------------------------------------------------
# Comparing (the part that runs outside the learner's process)
# --------------------------------------------------------------------------


class Mismatch(Exception):
    """Raised by a comparison when a case fails; its text is the learner's message.

    ``fraction`` is the share of the case (or, raised by a judge, of the whole
    check) that is still earned: 0 for a plain mismatch.
    """

    fraction: float = 0.0


class Partial(Mismatch):
    """A case (or check) that is partly right: ``Partial(message, fraction)``.

    Used for a mistake that leaves most of the work right (the dtype of an
    otherwise right result, only the fully masked rows wrong, an input
    changed in place), so that the points follow the size of the mistake.
    """

    def __init__(self, message: str, fraction: float) -> None:
        super().__init__(message)
        self.fraction = min(max(float(fraction), 0.0), 1.0)


class CheckFailed(AssertionError):
    """A notebook check failed. Jupyter shows only the message, no traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


@dataclass(frozen=True)
class Verdict:
    """What a comparison decided: ``fraction`` of the check's points earned.

    ``passed`` is True only for full marks; a partly right check has
    ``0 < fraction < 1`` and a message saying what is wrong."""

    passed: bool
    fraction: float
    message: str

    def to_json(self) -> dict:
        return asdict(self)


def quantize(fraction: float, points: float) -> float:
    """A fraction of ``points`` that gives a score in hundredths of a point
    (so the notebook, nbgrader and the class grader store the same number)."""
    fraction = min(max(float(fraction), 0.0), 1.0)
    if points <= 0:
        return fraction
    return round(round(points * fraction, 2) / points, 12)


def score_of(points: float, fraction: float) -> float:
    """``points * fraction`` rounded to hundredths of a point."""
    return round(float(points) * min(max(float(fraction), 0.0), 1.0), 2)


#: Relative tolerance by the dtype the learner must return.
RTOL = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-2}


def value_of(record: Mapping, what: str) -> Any:
    """The decoded value of one result record, or :class:`Mismatch` if it raised."""
    if not isinstance(record, Mapping):
        raise Mismatch(f"{what}: no result came back")
    if record.get("error"):
        error = str(record["error"])
        hint = ""
        if "could not be broadcast" in error:
            hint = (". Hint: arrays of different shapes met; did you leave out keepdims=True in a np.max or "
                    "np.sum over the last axis, so that the result cannot line up with the rows?")
        raise Mismatch(f"{what} raised {error}{hint}")
    try:
        return decode(record.get("value"))
    except Exception:  # results are untrusted data: anything malformed is the learner's loss
        raise Mismatch(f"{what}: its result could not be read") from None


def describe(value: Any) -> str:
    """A short description of a value that is not what was expected."""
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, Unsupported):
        return str(value)
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, np.generic):
        return f"a numpy {value.dtype} scalar"
    return f"a {type(value).__name__} ({value!r})"


def _index(flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat_index, shape))


def check_form(got: Any, expected: np.ndarray, *, what: str, check_dtype: bool = True) -> None:
    """Raise :class:`Mismatch` unless ``got`` is an array of the expected shape (and dtype)."""
    if not isinstance(got, np.ndarray):
        raise Mismatch(f"{what} returned {describe(got)}; expected a numpy array of shape {expected.shape}")
    if got.shape != expected.shape:
        raise Mismatch(f"{what} returned shape {got.shape}; expected shape {expected.shape}")
    if check_dtype and got.dtype != expected.dtype:
        hint = ""
        if expected.dtype == np.float32:
            hint = " (float32 input must give float32 output: keep the input's dtype, e.g. dtype=x.dtype)"
        raise Mismatch(f"{what} returned dtype {got.dtype}; expected {expected.dtype}{hint}")


def compare_arrays(
    got: Any,
    expected: np.ndarray,
    *,
    what: str,
    scale: float | None = None,
    rtol: float | None = None,
    check_dtype: bool = True,
) -> None:
    """Raise :class:`Mismatch` unless ``got`` is an array matching ``expected``.

    Tells the learner what is wrong, in this order: not an array, wrong shape
    (both shapes), wrong dtype, NaN or infinity where a finite value is
    expected, and else the largest difference, where it is, and the two values.
    Values match when ``|got - expected| <= rtol * (|expected| + scale)``, with
    ``rtol`` from :data:`RTOL` for the expected dtype and ``scale`` (the size
    of the numbers that went into each entry) defaulting to ``max(1, max|expected|)``.
    """
    expected = np.asarray(expected)
    check_form(got, expected, what=what, check_dtype=check_dtype)
    if expected.dtype == np.bool_ or got.dtype == np.bool_:
        wrong = got != expected
        if wrong.any():
            idx = _index(int(np.flatnonzero(wrong)[0]), got.shape)
            raise Mismatch(f"{what}: entry {idx} is {got[idx]!s}; expected {expected[idx]!s} "
                           f"({int(wrong.sum())} of {got.size} entries differ)")
        return
    if got.size == 0:
        return
    g = got.astype(np.float64)
    e = expected.astype(np.float64)
    name = expected.dtype.name if expected.dtype.kind == "f" else "float64"
    tol = RTOL.get(name, 1e-10) if rtol is None else rtol
    finite_e = np.isfinite(e)
    bad = np.isfinite(g) != finite_e
    bad |= ~finite_e & (g != e) & ~(np.isnan(g) & np.isnan(e))
    if bad.any():
        idx = _index(int(np.flatnonzero(bad)[0]), got.shape)
        raise Mismatch(f"{what}: entry {idx} is {got[idx]!s}; expected {expected[idx]!s} "
                       f"({int(bad.sum())} entries are NaN or infinite where they should not be, or the other way round)")
    if scale is None:
        scale = max(1.0, float(np.abs(e[finite_e]).max(initial=0.0)))
    with np.errstate(all="ignore"):
        diff = np.where(finite_e, np.abs(g - e), 0.0)
        allowed = tol * (np.abs(np.where(finite_e, e, 0.0)) + scale)
    over = diff > allowed
    if over.any():
        worst = _index(int(np.argmax(np.where(over, diff / allowed, -1.0))), got.shape)
        raise Mismatch(
            f"{what}: largest difference from the expected values is {diff[worst]:.3g} at index {worst}: "
            f"got {g[worst]:.10g}, expected {e[worst]:.10g} (tolerance {allowed[worst]:.2g} for {name}; "
            f"{int(over.sum())} of {got.size} entries are off)"
        )


def notes_of(record: Mapping) -> str:
    """What else the learner's function did (warnings, printed text), for a failure message."""
    parts = []
    if record.get("warnings"):
        parts.append("it warned: " + "; ".join(record["warnings"][:2]))
    if record.get("output"):
        parts.append("it printed: " + _bounded(record["output"], 300).strip())
    return (" [" + " | ".join(parts) + "]") if parts else ""


# --------------------------------------------------------------------------
# Checks and the registry
# --------------------------------------------------------------------------

#: Every check of every assignment: assignment name -> check id -> Check.
REGISTRY: dict[str, dict[str, Check]] = {}


@dataclass(frozen=True)
class Check:
    """One graded test cell of one assignment.

    ``id`` is also the nbgrader ``grade_id`` of the test cell that runs it,
    and ``points`` its points. ``functions`` names the learner functions that
    the cases call. ``cases(seed)`` builds the inputs; ``judge(cases,
    results)`` raises :class:`Mismatch` with a message for the learner, or
    returns a one-line summary of what passed.
    """

    assignment: str
    id: str
    functions: tuple[str, ...]
    points: float
    hidden: bool
    description: str
    cases: Callable[[int], list[dict]] = field(repr=False)
    judge: Callable[[list[dict], list[dict]], str] = field(repr=False)
    #: Seed of the visible checks (fixed, so the learner sees the same cases each time).
    default_seed: int = 0

    # piece (1)
    def make_cases(self, seed: int | None = None) -> list[dict]:
        """The check's input cases as plain JSON data, the same for the same seed."""
        return self.cases(self.default_seed if seed is None else int(seed))

    # piece (2)
    def run(self, functions: Mapping[str, Any], cases: list[dict]) -> list[dict]:
        """Run the learner's functions on the cases (see :func:`run_cases`)."""
        return run_cases(functions, cases)

    # piece (3)
    def compare(self, cases: list[dict], results: list[dict]) -> Verdict:
        """Decide the check from the cases and the learner's plain results.

        Any call into the reference earns nothing; so does a result list of
        the wrong length. Expected values are computed here, with ``lib``.
        """
        if not isinstance(results, list) or len(results) != len(cases):
            return Verdict(False, 0.0, f"{self.id}: expected {len(cases)} results, got something else")
        for case, record in zip(cases, results):
            if not _well_formed(record):
                return Verdict(False, 0.0, f"{case['call']}: its result could not be read")
            forbidden = record["forbidden"]
            if forbidden:
                return Verdict(False, 0.0, (
                    f"{case['call']} calls {', '.join(map(str, forbidden[:3]))}. This exercise asks for "
                    f"your own implementation (numpy only), so this check earns no points."))
        try:
            with np.errstate(all="ignore"):
                summary = self.judge(cases, results)
        except Mismatch as exc:
            return Verdict(False, quantize(getattr(exc, "fraction", 0.0), self.points), str(exc))
        return Verdict(True, 1.0, summary)

    def score(self, verdict: Verdict) -> float:
        """The points a verdict earns (rounded to hundredths, as nbgrader stores them)."""
        return score_of(self.points, verdict.fraction)

    def grade(self, functions: Mapping[str, Any], seed: int | None = None) -> Verdict:
        """(1) -> (2) -> (3) in this process."""
        cases = self.make_cases(seed)
        return self.compare(cases, self.run(functions, cases))


_RECORD_TYPES = {"value": (dict, type(None)), "error": (str, type(None)), "forbidden": list, "warnings": list,
                 "calls": list, "mutated": list,
                 "output": str, "lines": (int, type(None))}


def _well_formed(record: Any) -> bool:
    """Is this a result record as :func:`call_learner` makes them (types only)?"""
    if not isinstance(record, Mapping):
        return False
    for key, kind in _RECORD_TYPES.items():
        if not isinstance(record.get(key), kind) or isinstance(record.get(key), bool):
            return False
    return all(isinstance(x, str) for x in record["forbidden"] + record["warnings"] + record["calls"]
               + record["mutated"])


class Assignment:
    """The checks of one assignment, and the functions its notebook calls.

    An assignment module makes one (``A = Assignment("hw2_stable_softmax",
    chapter=...)``), registers its checks with :meth:`add` in notebook order,
    and calls :meth:`export` to define the ``check_*`` functions that the
    notebook's test cells call.
    """

    def __init__(self, name: str, chapter: str) -> None:
        self.name = name
        self.chapter = chapter
        REGISTRY.setdefault(name, {})

    @property
    def checks(self) -> dict[str, Check]:
        return REGISTRY[self.name]

    def add(self, id: str, functions: Sequence[str], *, points: float, cases, judge,
            description: str, hidden: bool | None = None) -> Check:
        """Register a check; ids ending in ``_hidden`` are hidden checks."""
        hidden = id.endswith("_hidden") if hidden is None else hidden
        if id in self.checks:
            raise ValueError(f"{self.name} already has a check {id!r}")
        check = Check(self.name, id, tuple(functions), float(points), hidden, description, cases, judge)
        self.checks[id] = check
        return check

    def check(self, check_id: str, *functions: Callable, seed: int | None = None,
              quiet: bool = False) -> float | None:
        """Run one check in this process on the learner's functions (given in the
        order of ``Check.functions``).

        Full marks: prints what passed and returns None (nbgrader then gives
        the cell all its points). Nothing right: raises :class:`CheckFailed`
        (0 points). Partly right: prints what is wrong and returns the score,
        a number that nbgrader reads from the cell's output as partial credit.
        A hidden check's seed comes from :func:`grading.seeds.hidden_seed`: the
        learner's own seed at grading, a fresh one when a learner practises.
        """
        try:
            chk = self.checks[check_id]
        except KeyError:
            raise KeyError(f"{self.name} has no check {check_id!r}; it has {sorted(self.checks)}") from None
        if len(functions) != len(chk.functions):
            raise TypeError(f"check {check_id!r} takes {len(chk.functions)} function(s), "
                            f"{', '.join(chk.functions)}; got {len(functions)}")
        if seed is None and chk.hidden:
            from .seeds import hidden_seed

            seed = hidden_seed(self.name)
        verdict = chk.grade(dict(zip(chk.functions, functions)), seed)
        extra = f" (hidden check, seed {seed})" if chk.hidden else ""
        if verdict.passed:
            if not quiet:
                print(f"passed: {verdict.message}")
            return None
        score = chk.score(verdict)
        if score <= 0:
            raise CheckFailed(verdict.message + extra)
        if not quiet:
            print(f"partly right, {score:g} of {chk.points:g} points (the number below is this cell's "
                  f"score): {verdict.message}{extra}")
        return score

    def check_before_submit(self, namespace: Mapping[str, Any], *, seed: int | None = None) -> dict[str, float]:
        """The learner's "check before you submit": every check, said plainly.

        Runs every visible check and the learner's own copy of every hidden
        check (the same kinds of inputs, on a fresh random seed, not the ones
        of grading), with the functions defined in ``namespace`` (the
        notebook's ``globals()``), and prints what passed, what each failure
        means (the check's message names the mistake), the points that would
        follow, and that the hidden tests run again at grading. Never raises
        and writes nothing to stderr. Returns ``{check id: points}``.

        It does nothing while a grader runs the notebook (``nbgrader
        autograde`` or the class grader), and says so when the reference
        ``lib`` cannot be imported (the notebook is not in the course folder).
        """
        from .seeds import ENV_SEED, autograde_location

        if os.environ.get(ENV_SEED) or autograde_location() is not None:
            print("Check before you submit: skipped while the homework is graded.")
            return {}
        try:
            reference()
            lib_missing = False
        except Exception:  # not importable here (a sandbox, a copy outside the course folder)
            lib_missing = True
        if lib_missing:
            print("Check before you submit: the checks compare your functions with the course's reference "
                  "implementation (the `lib` package), which cannot be imported here. Open this notebook from "
                  "the course folder (`./course lab`, see the welcome page) and run this cell again. Nothing "
                  "was checked.")
            return {}
        seed = secrets.randbits(31) if seed is None else int(seed)
        lines, scores = [], {}
        total = sum(c.points for c in self.checks.values())
        for chk in self.checks.values():
            functions = {name: namespace[name] for name in chk.functions if name in namespace}
            missing = [name for name in chk.functions if name not in namespace]
            kind = "hidden kind, fresh inputs" if chk.hidden else "visible"
            head = f"- {chk.id} ({chk.points:g} points, {kind}):"
            if missing:
                scores[chk.id] = 0.0
                lines.append(f"{head} NOT RUN: {', '.join(missing)} is not defined yet (run its cell first).")
                continue
            try:
                verdict = chk.grade(functions, seed if chk.hidden else None)
            except Exception as exc:  # a bug of the learner's that escaped: say it, never raise
                verdict = Verdict(False, 0.0, f"the check could not run ({type(exc).__name__}: {exc})")
            scores[chk.id] = chk.score(verdict)
            if verdict.passed:
                lines.append(f"{head} passed.")
            elif "NotImplementedError" in verdict.message:
                lines.append(f"{head} not answered yet ({', '.join(chk.functions)} still raises "
                             "NotImplementedError).")
            else:
                how = "FAILED" if scores[chk.id] <= 0 else f"partly right, {scores[chk.id]:g} of {chk.points:g}"
                lines.append(f"{head} {how}.\n    It checks: {chk.description}.\n    What went wrong: "
                             f"{verdict.message}")
        got = round(sum(scores.values()), 2)
        print(f"Check before you submit ({self.name}): {got:g} of {total:g} points on these inputs.")
        print("\n".join(lines))
        print("The hidden tests run again when your homework is graded, on inputs made for you (not these), "
              "so passing their kinds here makes full marks likely, not certain. A failure above names the "
              "case and the mistake; fix it and run this cell again (each run draws new hidden-kind inputs).")
        return scores

    def export(self, namespace: dict) -> None:
        """Define ``check_<name>(*functions, hidden=False, seed=None)`` in a module.

        ``check_softmax(f)`` runs check ``softmax``; with ``hidden=True`` it runs
        ``softmax_hidden``.
        """
        bases = sorted({cid.removesuffix("_hidden") for cid in self.checks})
        for base in bases:
            def runner(*functions, hidden: bool = False, seed: int | None = None, _base=base) -> float | None:
                # Returns None on full marks; a partly right answer returns its
                # score, which becomes the cell's output and nbgrader's partial credit.
                return self.check(f"{_base}_hidden" if hidden else _base, *functions, seed=seed)
            runner.__name__ = runner.__qualname__ = f"check_{base}"
            variants = [c for c in (base, f"{base}_hidden") if c in self.checks]
            runner.__doc__ = "\n".join(
                f"{'hidden=True' if self.checks[c].hidden else 'hidden=False'}: {self.checks[c].description}"
                for c in variants)
            namespace[runner.__name__] = runner
        namespace.setdefault("ASSIGNMENT", self.name)
        namespace["check_before_submit"] = self.check_before_submit


def checks_for(assignment: str) -> list[Check]:
    """Every check of an assignment, in the order they were defined."""
    _load_all()
    try:
        return list(REGISTRY[assignment].values())
    except KeyError:
        raise KeyError(f"no assignment {assignment!r}; known: {sorted(REGISTRY)}") from None


def get_check(assignment: str, check_id: str) -> Check:
    """One check by assignment name and check id (= the test cell's grade_id)."""
    for check in checks_for(assignment):
        if check.id == check_id:
            return check
    raise KeyError(f"{assignment} has no check {check_id!r}")


def all_checks() -> dict[str, list[Check]]:
    """Every assignment's checks, by assignment name."""
    _load_all()
    return {name: list(checks.values()) for name, checks in REGISTRY.items()}


def _load_all() -> None:
    import grading  # noqa: F401  (importing the package imports every assignment module)


def reference():
    """The reference implementation, imported only where expected values are computed."""
    import lib

    return lib


def new_seed() -> int:
    """A fresh seed for hidden checks."""
    return secrets.randbits(31)


def dumps(data: Any) -> str:
    """Strict JSON (no NaN), as exchanged between the pieces."""
    return json.dumps(data, allow_nan=False, separators=(",", ":"))
