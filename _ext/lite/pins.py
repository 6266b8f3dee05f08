"""The wheels pinned in ``requirements/lite.txt``: read, downloaded once into
``.lite-cache/`` (pip checks every hash) and checked again before use."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .places import CACHE, PINS, ROOT, LiteBuildError


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    sha256: str

    @property
    def stem(self) -> str:
        """The start of the pinned distribution's file names."""
        return f"{re.sub(r'[-_.]+', '_', self.name).lower()}-{self.version}-"


def read_pins(path: Path = PINS) -> dict[str, Pin]:
    """The ``name==version --hash=sha256:...`` lines of requirements/lite.txt."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line)
        if not m:
            raise LiteBuildError(f"{path}: cannot read the pin {line!r} (want name==version --hash=sha256:...)")
        pins[m.group(1).lower()] = Pin(m.group(1), m.group(2), m.group(3))
    return pins


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_file(pin: Pin) -> Path | None:
    """The downloaded wheel of a pin in .lite-cache/, if present and intact."""
    for path in CACHE.glob("*.whl"):
        if path.name.lower().startswith(pin.stem) and sha256_of(path) == pin.sha256:
            return path
    return None


def fetch_pinned(pins: dict[str, Pin]) -> dict[str, Path]:
    """Each pinned wheel, downloaded once (pip checks every hash) and re-checked here."""
    CACHE.mkdir(exist_ok=True)
    if any(cached_file(pin) is None for pin in pins.values()):
        print(f"lite: downloading the wheels pinned in {PINS.relative_to(ROOT)} (first build only)")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "-r",
                str(PINS),
                "-d",
                str(CACHE),
            ],
            check=True,
        )
    found = {}
    for key, pin in pins.items():
        path = cached_file(pin)
        if path is None:
            raise LiteBuildError(
                f"{pin.name}=={pin.version}: no wheel with sha256 {pin.sha256} in {CACHE} after pip download"
            )
        found[key] = path
    return found
