"""What decides a raw score, one hash per named input; the cache key is the hash of them all.

A result saved by an earlier run is reused only when its key is the current
one: the same submitted file, and every input below unchanged. Changing any
of them (a fix to ``lib`` mid-term, a new check, a longer time limit) makes
every earlier result stale; the class run then names what changed and
regrades only when asked (:class:`FingerprintChanged`).

The late policy is not an input: a cached raw score is re-priced under the
current policy without running the submission again.

Each run writes the inputs' hashes beside its results (``fingerprint.json``),
so that a later run can say which input changed. The same module hashes the
packages that a Dask worker must share with the client
(:func:`environment`), so a local and a cluster run agree on the key.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import platform
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classgrader.assignments.course import SetupError
from nbgrader_tools.content_hash import files_hash, text_hash

if TYPE_CHECKING:
    from classgrader.assignments.course import AssignmentInfo
    from classgrader.stages.sandbox_run import Settings

#: The folder holding classgrader, lib, grading and nbgrader_tools as imported (a checkout or its copy).
CHECKOUT = Path(__file__).resolve().parents[2]
#: The pinned packages, whose installed versions are an input.
CONSTRAINTS = CHECKOUT / "requirements" / "constraints.txt"
#: The grader's own code that runs a submission or decides and records its score (the class run's
#: bookkeeping, the books and the late policy are not in it: they never change a raw score).
GRADER_CODE = (
    "classgrader/stages",
    "classgrader/sandbox",
    "classgrader/assignments",
    "classgrader/records.py",
    "nbgrader_tools/cells.py",
    "nbgrader_tools/generated.py",
)

#: Each input of the key, in words (the order in which a change is named).
INPUTS = {
    "grader": "the grader's scoring and recording code (classgrader's stages, sandbox, assignments, records)",
    "checks": "the checks (grading, or a plain assignment's test cells)",
    "lib": "lib (the reference implementation)",
    "release": "the release (exercises/ASSIGNMENT)",
    "source": "the instructor's source notebook (solutions/ASSIGNMENT)",
    "secret": "the course secret",
    "limits": "the limits (--timeout, --memory)",
    "sandbox": "the sandbox settings (--sandbox, --no-sandbox, --no-kernel-record)",
    "environment": "Python or a pinned package's version",
}

RECORD = "fingerprint.json"


class FingerprintChanged(SetupError):
    """Results of an earlier run were graded under other inputs; the message names them and the option."""


def package_hash(folder: Path) -> str:
    """SHA-256 of a package's ``.py`` files."""
    return files_hash(folder.rglob("*.py"), folder)


def _code(entries: Iterable[str], root: Path = CHECKOUT) -> list[Path]:
    files: list[Path] = []
    for entry in entries:
        path = root / entry
        files.extend(path.rglob("*.py") if path.is_dir() else [path])
    return files


def pinned_names(constraints: Path = CONSTRAINTS) -> list[str]:
    """The names of the pinned packages (``requirements/constraints.txt``), or of every installed one."""
    if constraints.is_file():
        names = [
            line.split("==")[0].strip()
            for line in constraints.read_text().splitlines()
            if "==" in line and not line.lstrip().startswith("#")
        ]
    else:
        names = [d.metadata["Name"] for d in metadata.distributions() if d.metadata["Name"]]
    return sorted({n.lower() for n in names})


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=8)
def installed_versions(names: tuple[str, ...]) -> dict[str, str | None]:
    """Each pinned package's installed version (None when absent); read once per process."""
    return {name: _version(name) for name in names}


def platform_and_packages(names: tuple[str, ...]) -> dict[str, Any]:
    """Python, the processor and the pinned packages' versions."""
    return {
        "python": f"{platform.python_implementation()} {'.'.join(platform.python_version_tuple()[:2])}",
        "machine": platform.machine(),
        "packages": installed_versions(names),
    }


def environment(names: tuple[str, ...]) -> dict[str, Any]:
    """:func:`platform_and_packages` and the hashes of the code a worker runs.

    A Dask worker must match the client on all of it (:mod:`classgrader.pipeline.dask_cluster`).
    """
    from sdpa_course import grading, lib

    return {
        **platform_and_packages(names),
        "lib": package_hash(Path(lib.__file__).parent),
        "grading": package_hash(Path(grading.__file__).parent),
        "classgrader": package_hash(CHECKOUT / "classgrader"),
    }


def _release_and_source(course: Path, name: str) -> tuple[str, str]:
    release = course / "exercises" / name
    source = course / "solutions" / name
    visible = [p for p in release.iterdir() if not p.name.startswith(".")] if release.is_dir() else []
    return files_hash(visible, release), files_hash(source.glob("*.ipynb"), source)


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    """One hash per input of :data:`INPUTS`; :attr:`key` is the hash of them all."""

    inputs: dict[str, str]

    @property
    def key(self) -> str:
        return text_hash(self.inputs)[:16]

    def changed_since(self, earlier: Mapping[str, str]) -> list[str]:
        """The inputs (their names in :data:`INPUTS`) whose hash differs from ``earlier``'s."""
        return [name for name in INPUTS if self.inputs.get(name) != earlier.get(name)]


def of(course: Path, info: AssignmentInfo, settings: Settings) -> Fingerprint:
    """The fingerprint of grading ``info`` of ``course`` with ``settings`` (the sandbox mode as asked for)."""
    from sdpa_course import lib

    release, source = _release_and_source(course, info.name)
    sandbox = {"sandboxed": settings.sandboxed, "mode": settings.sandbox_mode, "kernel": settings.kernel_record}
    return Fingerprint(
        {
            "grader": files_hash(_code(GRADER_CODE), CHECKOUT),
            "checks": info.kind.checks_hash(info.name),
            "lib": package_hash(Path(lib.__file__).parent),
            "release": release,
            "source": source,
            "secret": hashlib.sha256(info.secret).hexdigest(),
            "limits": text_hash(dataclasses.asdict(settings.limits)),
            "sandbox": text_hash(sandbox),
            "environment": text_hash(platform_and_packages(tuple(pinned_names()))),
        }
    )


def read_record(folder: Path) -> dict[str, dict[str, str]]:
    """Key -> inputs, for the current and earlier keys recorded in ``folder`` (empty when there is none)."""
    try:
        data = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    known = dict(data.get("earlier") or {})
    if isinstance(data.get("key"), str) and isinstance(data.get("inputs"), dict):
        known[data["key"]] = data["inputs"]
    return {k: v for k, v in known.items() if isinstance(v, dict)}


def write_record(folder: Path, fingerprint: Fingerprint, still_used: Iterable[str]) -> None:
    """Record ``fingerprint`` in ``folder``, keeping the earlier keys that saved results still carry."""
    from classgrader.records import write_json_atomic

    known = read_record(folder)
    earlier = {k: known[k] for k in sorted(set(still_used)) if k in known and k != fingerprint.key}
    write_json_atomic(
        folder / RECORD,
        {"key": fingerprint.key, "inputs": fingerprint.inputs, "names": INPUTS, "earlier": earlier},
    )


def _results(n: int) -> str:
    return f"{n} saved result{'s' if n != 1 else ''}"


def stale_message(fingerprint: Fingerprint, stale_keys: list[str], folder: Path, assignment: str) -> str:
    """Why a run stops before regrading ``len(stale_keys)`` results saved under other keys, and what to pass."""
    known = read_record(folder)
    changed: list[str] = []
    unrecorded = 0
    for key in stale_keys:
        if key in known:
            changed += [n for n in fingerprint.changed_since(known[key]) if n not in changed]
        else:
            unrecorded += 1
    what = [f"{INPUTS[n]} changed" for n in INPUTS if n in changed]
    if unrecorded:
        what.append(f"for {_results(unrecorded)}, what graded them is not recorded in {folder / RECORD}")
    return (
        f"what decides the scores of {assignment} changed since it was graded: {'; '.join(what)}. "
        f"{_results(len(stale_keys))} would be regraded. Nothing was graded: run again with --preview to see "
        "whose grades would change (nothing written), with --regrade to regrade them, or undo the change to "
        "keep them."
    )
