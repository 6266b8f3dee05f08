"""The plain data that crosses between the learner's process and the grader's.

Every value a check exchanges is JSON: the input cases (:func:`make_case`),
the values the learner's functions return (:func:`encode`, :func:`decode`)
and the result record of each call (:func:`new_record`, :func:`well_formed`).
Nothing here runs learner code or imports ``lib``.

Values
------
An array is ``{"array": {"dtype": "float32", "shape": [2, 3], "data": [...]}}``
with the elements flattened in C order (``"inf"``, ``"-inf"`` and ``"nan"`` as
strings, so the JSON stays strict); a number is ``{"number": 1.5}``; also
``{"bool": ...}``, ``{"str": ...}``, ``{"none": true}``, ``{"tuple": [...]}``,
``{"list": [...]}``, ``{"rng": seed}`` (an input only: a fresh
``numpy.random.default_rng(seed)``), and, for anything else a learner's
function returns, ``{"other": "<type name>"}``. float32 values survive the
round trip exactly.

Result records
--------------
One call of a learner's function gives one record, a :class:`ResultRecord`
(made in the learner's process by :func:`grading.run.call_learner`, read by
the grader, which first checks it with :func:`well_formed`): ``value``
(an encoded value, or None when the call raised), ``error`` (None or the
learner's exception as text), ``forbidden`` (calls it may not make),
``calls`` (noted numpy calls), ``mutated`` (inputs it changed in place),
``warnings``, ``output`` (what it printed), ``lines`` (lines of learner code
run, when counted) and ``seconds``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Any, NotRequired, TypedDict, TypeGuard, Union, get_args, get_origin, get_type_hints

import numpy as np

__all__ = [
    "Case",
    "Plain",
    "ResultRecord",
    "Unsupported",
    "bounded",
    "case_inputs",
    "decode",
    "encode",
    "make_case",
    "new_record",
    "rng_arg",
    "well_formed",
]


#: A value as plain JSON data: ``{"array": {...}}``, ``{"number": 1.5}``, ... (see above).
Plain = dict[str, Any]


class Case(TypedDict):
    """One input case (:func:`make_case`): call the learner's function ``call`` with these arguments."""

    call: str
    args: list[Plain]
    kwargs: dict[str, Plain]
    label: str  # what the case is, in words, shown to the learner when it fails
    count_lines: bool  # count the lines of learner code the call runs (a loop or vectorized?)


#: Largest array (in elements) that a learner's result may be, as plain data.
MAX_RESULT_SIZE = 1 << 20
_FLOAT_TYPES = (np.float16, np.float32, np.float64)
_SCALAR_TYPES = {
    np.dtype(t).type for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
} | set(_FLOAT_TYPES)


def _plain_float(x: float) -> float | str:
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _encode_array(arr: np.ndarray) -> Plain:
    if arr.dtype.kind == "f":
        flat: list[Any] = arr.astype(np.float64).ravel().tolist()
        if not np.isfinite(arr).all():
            flat = [_plain_float(v) for v in flat]
    else:
        flat = arr.ravel().tolist()
    return {"array": {"dtype": arr.dtype.name, "shape": list(arr.shape), "data": flat}}


def encode(value: Any, _depth: int = 0) -> Plain:
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


def rng_arg(seed: int) -> Plain:
    """Plain data that decodes to a fresh ``numpy.random.default_rng(seed)``."""
    return {"rng": int(seed)}


def make_case(call: str, *args: Any, label: str, count_lines: bool = False, **kwargs: Any) -> Case:
    """One input case: call the learner's function ``call`` with these arguments.

    Arguments that are already plain data (a dict from :func:`encode` or
    :func:`rng_arg`) are kept; anything else is encoded. ``label`` says in
    words what the case is; it is shown to the learner when the case fails.
    ``count_lines`` asks :func:`run_cases` to count the lines of learner code
    that the call executes (to tell a loop from a vectorized function).
    """

    def enc(v: Any) -> Plain:
        return v if isinstance(v, dict) else encode(v)

    return Case(
        call=call,
        args=[enc(a) for a in args],
        kwargs={k: enc(v) for k, v in kwargs.items()},
        label=label,
        count_lines=count_lines,
    )


def case_inputs(case: Case) -> tuple[list[Any], dict[str, Any]]:
    """Decode a case's arguments (each call gets fresh arrays and generators)."""
    return [decode(a) for a in case["args"]], {k: decode(v) for k, v in case["kwargs"].items()}


def bounded(text: str, limit: int = 2000) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


class ResultRecord(TypedDict):
    """One call of a learner's function, as the grader reads it (see the module docstring).

    :func:`well_formed` checks a record against these types, so this class is
    the one definition of what a record must hold.
    """

    value: Plain | None  # None when the call raised
    error: str | None  # the learner's exception as text
    forbidden: list[str]  # calls it may not make
    warnings: list[str]
    calls: list[str]  # noted numpy calls
    mutated: list[str]  # inputs it changed in place
    output: str  # what it printed
    lines: int | None  # lines of learner code run, when counted
    seconds: NotRequired[float]  # always written, never read by the grader


def new_record(error: str | None = None) -> ResultRecord:
    """A result record with nothing in it yet (or only ``error``)."""
    return ResultRecord(
        value=None,
        error=error,
        forbidden=[],
        warnings=[],
        calls=[],
        mutated=[],
        output="",
        lines=None,
        seconds=0.0,
    )


def _fits(value: object, hint: Any) -> bool:
    """Is ``value`` of the type ``hint`` (a type of :class:`ResultRecord`'s keys)? A bool is never a number."""
    origin = get_origin(hint)
    if origin in (Union, UnionType):
        return any(_fits(value, arg) for arg in get_args(hint))
    if origin is list:
        (item,) = get_args(hint)
        return isinstance(value, list) and all(_fits(x, item) for x in value)
    if origin is not None:
        return isinstance(value, origin)
    if hint is type(None):
        return value is None
    return isinstance(value, hint) and not isinstance(value, bool)


#: The keys that a well-formed record must have, with their types (not ``seconds``, never read).
_RECORD_TYPES = {
    key: hint
    for key, hint in get_type_hints(ResultRecord, include_extras=True).items()
    if get_origin(hint) is not NotRequired
}


def well_formed(record: object) -> TypeGuard[ResultRecord]:
    """Is this a result record as :func:`new_record` and ``call_learner`` make them (types only)?

    >>> well_formed(new_record("NameError: no function named 'f' is defined"))
    True
    >>> well_formed({**new_record(), "forbidden": [1]})
    False
    >>> well_formed({**new_record(), "lines": True})
    False
    """
    if not isinstance(record, Mapping):
        return False
    return all(_fits(record.get(key), hint) for key, hint in _RECORD_TYPES.items())
