"""The learner kit: what a learner installs to do the homework outside the browser.

``./course kit`` (also run by ``./course build``) writes into the built site's
``kit/`` folder:

- the course wheel (:func:`wheel_name`), holding exactly the packages in
  :data:`PACKAGES`: the reference ``lib``, the chapters' ``teaching`` helpers
  and the homework's checks ``grading``. They are public by design; the
  secret that seeds each learner's hidden inputs is not in them, and the
  solutions (``solutions/``) and the instructors' tools are not either;
- :data:`REQUIREMENTS`: the packages the homework needs (``requirements/kit.in``)
  and everything they depend on, each pinned to the version the course was
  tested with (``requirements/constraints.txt``);
- :data:`HOMEWORK_ZIP`: the released homework, ``exercises/`` as nbgrader made
  it, one folder per assignment;
- :data:`DOCKERFILE`: a JupyterHub single-user image recipe that installs the
  kit with the same two lines.

A learner installs the two first with ``python -m pip install -r
REQUIREMENTS`` and ``python -m pip install WHEEL``; a JupyterHub image does
the same (the kit's :data:`DOCKERFILE`). The in-browser Jupyter loads the same
wheel (``_ext/lite/``). Nothing is rebuilt when the inputs are unchanged.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .content_hash import files_hash

__all__ = [
    "DOCKERFILE",
    "HOMEWORK_ZIP",
    "PACKAGES",
    "REQUIREMENTS",
    "build",
    "dockerfile",
    "download_html",
    "install_lines",
    "pinned_requirements",
    "wheel_name",
]

REPO = Path(__file__).resolve().parent.parent
#: The packages of the course wheel, and nothing else.
PACKAGES = ("lib", "teaching", "grading")
REQUIREMENTS = "sdpa-course-requirements.txt"
HOMEWORK_ZIP = "sdpa-course-homework.zip"
KIT_IN = REPO / "requirements" / "kit.in"
CONSTRAINTS = REPO / "requirements" / "constraints.txt"
EXERCISES = REPO / "exercises"
STAMP = ".kit-inputs"
# Every file in a zip gets this date, so the same inputs give the same bytes.
ZIP_DATE = (2024, 1, 1, 0, 0, 0)


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def wheel_name() -> str:
    """The file name of the course wheel (from pyproject.toml's name and version)."""
    project = _project()
    return f"{re.sub(r'[-_.]+', '_', project['name']).lower()}-{project['version']}-py3-none-any.whl"


def _sources() -> list[Path]:
    files = [REPO / "pyproject.toml", KIT_IN, CONSTRAINTS, Path(__file__)]
    for package in PACKAGES:
        files += sorted(p for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts)
    files += sorted(p for p in EXERCISES.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts)
    return files


def inputs_hash() -> str:
    """A hash of every input of the kit (names and contents)."""
    return files_hash(_sources(), REPO)


def _constraints() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[canonicalize_name(name)] = version.strip()
    return pins


def pinned_requirements() -> list[str]:
    """``name==version`` for the packages of ``requirements/kit.in`` and all they need.

    The closure is read from the installed distributions' metadata (this
    environment was installed from the constraints); a requirement behind an
    environment marker (another platform) keeps its marker, and its pin when
    the constraints have one.
    """
    pins = _constraints()
    names = [line.split("#", 1)[0].strip() for line in KIT_IN.read_text(encoding="utf-8").splitlines()]
    roots = [Requirement(name) for name in names if name]
    lines: dict[str, str] = {}
    done: set[tuple[str, str]] = set()  # (name, extra) already walked
    todo: list[tuple[Requirement, str]] = [(r, "") for r in roots]
    while todo:
        req, extra = todo.pop()
        name = canonicalize_name(req.name)
        if req.marker and not req.marker.evaluate({"extra": extra}):
            if "extra" not in str(req.marker) and name not in lines:  # another platform's dependency
                pin = f"=={pins[name]}" if name in pins else ""
                lines[name] = f"{name}{pin}; {req.marker}"
            continue
        if name not in pins:
            raise RuntimeError(f"{name} (needed by the kit) has no pin in {CONSTRAINTS.relative_to(REPO)}")
        lines[name] = f"{name}=={pins[name]}"
        for wanted in ("", *sorted(req.extras)):
            if (name, wanted) not in done:
                done.add((name, wanted))
                todo += [(Requirement(r), wanted) for r in metadata.requires(name) or []]
    return [lines[n] for n in sorted(lines)]


def _write_zip(target: Path, files: dict[str, bytes]) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])


def build_wheel(out: Path) -> Path:
    """The course wheel, holding exactly :data:`PACKAGES`, into folder ``out``."""
    project = _project()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for package in PACKAGES:
            shutil.copytree(
                REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "test_*.py")
            )
        deps = ", ".join(f'"{d}"' for d in project.get("dependencies", []))
        (src / "pyproject.toml").write_text(
            "[build-system]\n"
            'requires = ["setuptools>=69"]\n'
            'build-backend = "setuptools.build_meta"\n\n'
            "[project]\n"
            f'name = "{project["name"]}"\n'
            f'version = "{project["version"]}"\n'
            f'description = "{project["description"]}"\n'
            f'requires-python = "{project["requires-python"]}"\n'
            f"dependencies = [{deps}]\n\n"
            "[tool.setuptools.packages.find]\n"
            f"include = [{', '.join(f'{chr(34)}{p}*{chr(34)}' for p in PACKAGES)}]\n",
            encoding="utf-8",
        )
        dist = Path(tmp) / "dist"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--disable-pip-version-check",
                "--wheel-dir",
                str(dist),
                str(src),
            ],
            check=True,
            # the same sources give the same wheel, byte for byte (zip dates from this epoch)
            env={**os.environ, "SOURCE_DATE_EPOCH": "315532800"},
        )
        (wheel,) = dist.glob("*.whl")
        target = out / wheel_name()
        shutil.copy2(wheel, target)
    return target


DOCKERFILE = "Dockerfile"


def install_lines() -> list[str]:
    """The two lines that install the kit, run in the folder that holds its files."""
    return [f"python -m pip install -r {REQUIREMENTS}", f"python -m pip install {wheel_name()}"]


def download_html(prefix: str) -> str:
    """The kit's downloads (links relative to a page: ``prefix`` leads to ``kit/``) and its install lines."""
    from html import escape

    items = [
        (wheel_name(), "the course's Python package: lib, teaching and grading"),
        (REQUIREMENTS, "the packages the homework needs, at the versions the course was tested with"),
        (HOMEWORK_ZIP, "the homework notebooks, one folder per assignment"),
        (DOCKERFILE, "for instructors: a JupyterHub single-user image with the kit installed"),
    ]
    links = "".join(
        f'<li><a href="{escape(prefix + name)}" download><code>{escape(name)}</code></a>: {escape(what)}</li>'
        for name, what in items
    )
    lines = escape("\n".join(install_lines()))
    return (
        f'<div class="learner-kit"><p><strong>The learner kit</strong></p><ul>{links}</ul>'
        f"<p>Install it, in the folder that holds the files:</p><pre><code>{lines}</code></pre></div>"
    )


def dockerfile() -> str:
    """A JupyterHub single-user image with the kit installed (the same two pip lines as a learner's)."""
    wheel = wheel_name()
    return "\n".join(
        [
            "# A JupyterHub single-user image for the course's homework: the learner kit on top of",
            "# Jupyter's base notebook image. In a folder that holds this file and the kit's",
            f"# {REQUIREMENTS} and {wheel}:",
            "#     docker build -t sdpa-course-hub .",
            "# then name the image in the hub's configuration (c.DockerSpawner.image = 'sdpa-course-hub',",
            "# or singleuser.image in Zero to JupyterHub). The homework zip is handed out separately",
            "# (nbgrader's exchange, or the learners' own download).",
            "ARG BASE=jupyter/base-notebook:python-3.11",
            "FROM ${BASE}",
            "ENV PIP_NO_CACHE_DIR=1",
            "WORKDIR /tmp/kit",
            f"COPY {REQUIREMENTS} {wheel} ./",
            *(f"RUN {line}" for line in install_lines()),
            "WORKDIR /home/jovyan",
            "",
        ]
    )


def build(site: Path, *, force: bool = False) -> Path:
    """Write the kit into ``<site>/kit/`` unless it is there and its inputs are unchanged."""
    out = Path(site) / "kit"
    want = inputs_hash()
    stamp = out / STAMP
    outputs = [out / wheel_name(), out / REQUIREMENTS, out / HOMEWORK_ZIP, out / DOCKERFILE]
    if not force and stamp.exists() and stamp.read_text() == want and all(p.exists() for p in outputs):
        print(f"kit: up to date in {out}")
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    build_wheel(out)
    header = [
        "# The packages the homework needs, pinned to the versions the course was tested with.",
        f"# Install: python -m pip install -r {REQUIREMENTS}, then python -m pip install {wheel_name()}",
    ]
    (out / REQUIREMENTS).write_text("\n".join(header + pinned_requirements()) + "\n", encoding="utf-8")
    files = {
        str(p.relative_to(EXERCISES)): p.read_bytes()
        for p in sorted(EXERCISES.rglob("*"))
        if p.is_file() and ".ipynb_checkpoints" not in p.parts
    }
    _write_zip(out / HOMEWORK_ZIP, files)
    (out / DOCKERFILE).write_text(dockerfile(), encoding="utf-8")
    stamp.write_text(want)
    print(f"kit: wrote {', '.join(p.name for p in outputs)} into {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the learner kit into the site.")
    parser.add_argument("--site", type=Path, default=REPO / "_build" / "html")
    parser.add_argument("--force", action="store_true", help="rebuild even when the inputs are unchanged")
    args = parser.parse_args(argv)
    build(args.site, force=args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
