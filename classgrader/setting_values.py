"""The values of the course's settings that traitlets has no trait for, and the traits that read them.

traitlets reads the plain ones (text, numbers, flags, choices, dicts); the
traits here read what people write for the rest: sizes (``"2g"``), durations
(``"15m"``), points or percentages (``"10%"``), time zones
(``"Europe/Berlin"``, ``"+01:00"``), files and web addresses. A value one
cannot read raises :class:`BadSetting`, which names the setting
(``Class.trait``). The settings themselves are declared in
:mod:`classgrader.settings`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from pathlib import Path, PurePath
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dateutil.parser import isoparser
from traitlets import CaselessStrEnum, Dict, TraitError, TraitType, Unicode

_OFFSET = re.compile(r"^[+-]\d{2}(:?\d{2})?$")
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


class BadSetting(TraitError):
    """A trait's value that cannot be read: ``setting`` (``Class.trait``) and ``problem`` (what is wrong)."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting} {problem}")
        self.setting = setting
        self.problem = problem


# --------------------------------------------------------------------------
# Reading the values people write
# --------------------------------------------------------------------------


def zone(name: str) -> dt.tzinfo:
    """The time zone called ``name``: ``UTC``, ``GMT``, ``Z``, an offset like ``+01:00``, or an IANA name.

    >>> zone("UTC")
    datetime.timezone.utc
    >>> zone("Europe/Berlin")
    zoneinfo.ZoneInfo(key='Europe/Berlin')
    """
    text = (name or "").strip()
    if text.upper() in ("UTC", "GMT", "Z"):
        return dt.UTC
    try:
        if _OFFSET.match(text):
            offset: dt.tzinfo = isoparser().parse_tzstr(text)
            return offset
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}: use UTC, an offset such as +01:00, or an IANA name such as Europe/Berlin"
        ) from None


def seconds_of(text: str | float | int) -> float:
    """Seconds from ``"0"``, ``"90s"``, ``"15m"``, ``"2h"``, ``"1d"`` (a bare number is seconds).

    >>> seconds_of("15m")
    900.0
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text))
        if not m:
            raise ValueError(f"{text!r} is not a duration: write e.g. 0, 90s, 15m, 2h or 1d")
        seconds = float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m[2]]
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"must be a duration of 0 or more, not {text!r}")
    return seconds


def bytes_of(text: str | int) -> int:
    """Bytes from ``"2g"``, ``"512m"``, ``"64k"`` (powers of 1024; a trailing ``b`` allowed) or a number.

    >>> bytes_of("2g"), bytes_of("1.5k"), bytes_of(4096)
    (2147483648, 1536, 4096)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?)b?\s*", str(text).lower())
    if isinstance(text, bool) or not m:
        raise ValueError(f"{text!r} is not a size: write e.g. 512m, 2g or a number of bytes")
    size = int(float(m[1]) * _SIZE_UNITS[m[2]])
    if size <= 0:
        raise ValueError(f"must be more than 0 bytes, not {text!r}")
    return size


def size_text(size: int) -> str:
    """``size`` bytes as :func:`bytes_of` reads it, in the largest unit that divides it: ``2g``, ``512m``."""
    unit = next(u for u in ("g", "m", "k", "") if size % _SIZE_UNITS[u] == 0)
    return f"{size // _SIZE_UNITS[unit]}{unit}"


@dataclasses.dataclass(frozen=True)
class Amount:
    """Points, or a percentage of the assignment's maximum score."""

    value: float
    percent: bool

    @classmethod
    def parse(cls, text: str | float | int) -> Amount:
        """``"10%"`` -> 10 percent, ``"1"`` or ``1`` -> 1 point."""
        t = str(text).strip()
        percent = t.endswith("%")
        try:
            value = float(t.rstrip("%").strip())
        except ValueError:
            raise ValueError(f"{text!r} is not a number of points or a percentage like 10%") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"must be 0 or more, not {text!r}")
        return cls(value, percent)

    def points(self, max_score: float) -> float:
        return self.value * max_score / 100 if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g} points"


# --------------------------------------------------------------------------
# The traits: each reads what people write, or names itself in the error
# --------------------------------------------------------------------------


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


class Setting(TraitType[Any, Any]):
    """A setting read from text by :meth:`read`, whose errors name ``Class.trait``.

    A blank value (``""``) means the default (``None`` when that is none).
    """

    #: what the help says the value is, e.g. "SIZE"
    metavar = "TEXT"

    def read(self, value: Any) -> Any:
        return value

    def shown(self, value: Any) -> str:
        """``value`` as people write it (the help's default)."""
        return str(value)

    def command_line_value(self, text: str) -> Any:
        """What the command line's ``text`` stands for in this run (the text itself, unless a subclass says)."""
        return text

    def validate(self, obj: Any, value: Any) -> Any:
        if _blank(value):
            if not _blank(self.default_value):
                value = self.default_value
            elif self.allow_none:
                return None
        try:
            return self.read(value)
        except (ValueError, TypeError) as exc:
            owner = self.this_class.__name__ if self.this_class else "?"
            raise BadSetting(f"{owner}.{self.name}", str(exc)) from None


class Size(Setting):
    metavar = "SIZE"

    def read(self, value: Any) -> int:
        return bytes_of(value)

    def shown(self, value: Any) -> str:
        return size_text(bytes_of(value))


class Duration(Setting):
    metavar = "DURATION"

    def read(self, value: Any) -> float:
        return seconds_of(value)


class Points(Setting):
    metavar = "AMOUNT"

    def read(self, value: Any) -> Amount:
        return value if isinstance(value, Amount) else Amount.parse(value)


class Zone(Setting):
    metavar = "ZONE"

    def read(self, value: Any) -> dt.tzinfo:
        return value if isinstance(value, dt.tzinfo) else zone(str(value))


class File(Setting):
    """A file's path, ``~`` allowed: in ``nbgrader_config.py`` relative to the course folder, on the command line
    to the current folder (where the shell completed it)."""

    metavar = "FILE"

    def read(self, value: Any) -> Path:
        if not isinstance(value, (str, PurePath)):
            raise ValueError(f"must be a file's path, not {value!r}")
        return Path(value).expanduser()

    def command_line_value(self, text: str) -> str:
        return str(Path(text).expanduser().absolute())


class Address(Setting):
    """A web address, kept with one trailing ``/`` so that a page's name can follow it."""

    def read(self, value: Any) -> str:
        if not isinstance(value, str) or any(ch.isspace() for ch in value.strip()):
            raise ValueError(f"must be a web address such as https://example.org/attention-course/, not {value!r}")
        return value.strip().rstrip("/") + "/"


class Choice(CaselessStrEnum[str]):
    """traitlets' caseless choice, where ``prefix`` (e.g. ``"per "``) and spaces may surround the word."""

    def __init__(self, values: tuple[str, ...], default_value: str, *, prefix: str = "", **kwargs: Any) -> None:
        super().__init__(values, default_value, **kwargs)
        self.prefix = prefix

    def validate(self, obj: Any, value: Any) -> str:
        if isinstance(value, str):
            value = value.strip().lower().removeprefix(self.prefix)
        chosen: str = super().validate(obj, value)
        return chosen

    def info(self) -> str:
        *others, last = map(repr, self.values or ())
        return f"{', '.join(others)} or {last}"


class PerAssignment(Dict):
    """traitlets' dict of a text for each assignment; ``what`` and ``example`` (one text) say what in errors."""

    def __init__(self, what: str, example: str, **kwargs: Any) -> None:
        super().__init__(key_trait=Unicode(), value_trait=Unicode(), **kwargs)
        self.what = what
        self.example = example

    def info(self) -> str:
        return f"a dict mapping assignment names to {self.what}, e.g. {{'hw2_stable_softmax': {self.example!r}}}"
