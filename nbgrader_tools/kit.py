"""The learner kit: what a learner installs to do the homework outside the browser.

``./course kit`` (also run by ``./course build``) writes into the built site's
``kit/`` folder:

- the course wheel (:func:`wheel_name`), holding exactly the packages in
  :data:`PACKAGES`: the course package ``sdpa_course``, with the reference
  ``lib``, the chapters' ``teaching`` helpers and the homework's checks
  ``grading``. They are public by design; the
  secret that seeds each learner's hidden inputs is not in them, and the
  solutions (``solutions/``) and the instructors' tools are not either;
- :data:`REQUIREMENTS`: the packages the homework needs, the ranges of
  ``requirements/kit.in`` (:func:`kit_requirements`), each holding the
  version the course was tested with;
- :data:`HOMEWORK_ZIP`: the released homework, ``exercises/`` as nbgrader made
  it, one folder per assignment, with its links to the book made to work where
  the zip is unpacked (:func:`homework_files`);
- :data:`EXCHANGE_REQUIREMENTS`: the optional extra for fetching and submitting
  through nbgrader's exchange from the learner's own machine (:func:`exchange_lines`):
  nbgrader at the course's own pin;
- :data:`DOCKERFILE`: a JupyterHub single-user image recipe that installs the
  kit with the same two lines.

A learner installs the two first into a virtual environment of the course's
own (:func:`learner_lines`); a JupyterHub image runs the same two pip lines
(:func:`install_lines`, in the kit's :data:`DOCKERFILE`). The in-browser Jupyter loads the same
wheel (``_ext/lite/``). Nothing is rebuilt when the inputs are unchanged.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from .content_hash import files_hash

__all__ = [
    "DOCKERFILE",
    "EXCHANGE_REQUIREMENTS",
    "HOMEWORK_ZIP",
    "PACKAGES",
    "REQUIREMENTS",
    "build",
    "dockerfile",
    "download_html",
    "exchange_lines",
    "homework_files",
    "install_lines",
    "kit_requirements",
    "learner_lines",
    "python_marker",
    "wheel_name",
]

REPO = Path(__file__).resolve().parent.parent
#: The packages of the course wheel, and nothing else: one top-level name, unlikely to be one of a
#: learner's own folders beside their notebook (see sdpa_course/__init__.py).
PACKAGES = ("sdpa_course",)
#: Data files the wheel carries inside a package (package -> files of the repository): chapter 11's
#: model, which homework 11 and its checks read through ``lib.tiny_lm.checkpoint()``.
PACKAGE_DATA = {"sdpa_course.lib": (REPO / "chapters" / "tiny_lm.npz",)}
REQUIREMENTS = "sdpa-course-requirements.txt"
EXCHANGE_REQUIREMENTS = "sdpa-course-exchange-requirements.txt"
#: What fetching and submitting through the exchange needs on top of the kit. Exact pins, not ranges:
#: the exchange's folders are nbgrader's own layout, so the learner's nbgrader is the instructor's.
EXCHANGE_PACKAGES = ("nbgrader",)
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
    # nbgrader_config.py names the published book (the zip's links) and the course id (the exchange lines).
    files = [REPO / "pyproject.toml", KIT_IN, CONSTRAINTS, REPO / "nbgrader_config.py", Path(__file__)]
    for package in PACKAGES:
        files += sorted(p for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts)
    files += [path for paths in PACKAGE_DATA.values() for path in paths]
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


def _shown(path: Path) -> Path:
    """A path as a message names it: inside the course, from its root."""
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


class KitError(RuntimeError):
    """The kit cannot be made as it stands: the message names the file and what to change."""


def python_marker() -> str:
    """The course's ``requires-python`` (pyproject.toml) as an environment marker.

    Every line of the kit's requirements file carries it, so that on a Python
    too old pip installs nothing from that file (instead of failing in its
    resolver over some package's own floor) and the next line, the course
    wheel, stops with pip's one sentence: the package requires a different
    Python, naming the learner's and the one wanted.

    >>> python_marker()
    'python_full_version >= "3.11"'
    """
    wanted = SpecifierSet(_project()["requires-python"])
    return " and ".join(f'python_full_version {spec.operator} "{spec.version}"' for spec in sorted(wanted, key=str))


def kit_requirements() -> list[str]:
    """The requirement lines of ``requirements/kit.in``, as the kit's requirements file holds them.

    Each is a range with a lower and an upper bound that holds the course's
    own pin (``constraints.txt``, the version the suite runs on); pip picks,
    on each learner's Python, the newest release inside it. Each carries
    :func:`python_marker`.
    """
    pins = _constraints()
    marker = python_marker()
    where = _shown(KIT_IN)
    lines = []
    for raw in KIT_IN.read_text(encoding="utf-8").splitlines():
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        req = Requirement(text)
        ops = {spec.operator for spec in req.specifier}
        if not ops & {">=", ">", "~="} or not ops & {"<", "<=", "~="}:
            raise KitError(f"{where}: {text!r} needs a lower and an upper bound, such as numpy>=2.1,<3")
        pin = pins.get(canonicalize_name(req.name))
        if pin is None or not req.specifier.contains(pin, prereleases=True):
            raise KitError(
                f"{where}: {text!r} does not hold the course's own {req.name}=={pin} "
                f"({_shown(CONSTRAINTS)}): widen the range or change the pin"
            )
        if req.marker is not None:
            raise KitError(f"{where}: {text!r} has a marker of its own; the kit gives every line the Python floor")
        lines.append(f"{req}; {marker}")
    # The wheel is installed without its dependencies (install_lines): this file brings them.
    given = {canonicalize_name(Requirement(line).name) for line in lines}
    for dependency in _project().get("dependencies", []):
        if canonicalize_name(Requirement(dependency).name) not in given:
            raise KitError(f"{where}: the course wheel needs {dependency!r} (pyproject.toml): add a range for it")
    return lines


def exchange_requirements() -> list[str]:
    """The lines of :data:`EXCHANGE_REQUIREMENTS`: each of :data:`EXCHANGE_PACKAGES` at the course's own pin."""
    pins = _constraints()
    lines = []
    for name in EXCHANGE_PACKAGES:
        pin = pins.get(canonicalize_name(name))
        if pin is None:
            raise KitError(
                f"{_shown(CONSTRAINTS)} pins no {name}, which the kit's exchange extra installs: add {name}==<version>"
            )
        lines.append(f"{name}=={pin}; {python_marker()}")
    return lines


def course_settings() -> Any:
    """The repository's ``nbgrader_config.py`` as the grader reads it: the course id and the book's address."""
    from classgrader import settings

    try:
        return settings.read(REPO)
    except settings.ConfigError as exc:
        raise KitError(str(exc)) from None


# --------------------------------------------------------------------------
# The homework zip's links
# --------------------------------------------------------------------------

# A Markdown link or image, [text](target "title"), whose target is relative (no scheme, no leading / or #).
MD_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>(?![a-zA-Z][\w+.-]*:|/|#)[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)"
)
# An HTML element with a relative href or src (the start-here cell's <a href="../../kit/..." download>).
HTML_LINK = re.compile(
    r"<(?P<tag>a|img)\b(?P<before>[^>]*?)\b(?P<attr>href|src)=\"(?P<target>(?![a-zA-Z][\w+.-]*:|/|#)[^\"]+)\""
    r"(?P<after>[^>]*)>(?:(?P<inner>.*?)</(?P=tag)>)?",
    re.DOTALL,
)
PAGE_SUFFIXES = (".md", ".ipynb")


def _site_path(notebook: str, target: str, zipped: set[str]) -> tuple[str | None, str]:
    """Where ``target`` (a relative link of the release notebook ``notebook``, a path inside ``exercises/``)
    leads: (None, anchor) for a file of the zip, else (its path in the built site, anchor)."""
    path, hash_, anchor = target.partition("#")
    inside = posixpath.normpath(posixpath.join(posixpath.dirname(notebook), path))
    if inside in zipped or (not path and anchor):
        return None, hash_ + anchor
    in_repo = posixpath.normpath(posixpath.join("exercises", inside))
    if in_repo.startswith("../") or in_repo.startswith("exercises/"):
        what = "out of the course" if in_repo.startswith("../") else "to no file of the homework zip"
        raise KitError(
            f"exercises/{notebook}: the link {target!r} leads {what}; point it at a file of the zip "
            "or a page of the book (such as ../../chapters/<page>.md)"
        )
    stem, suffix = posixpath.splitext(in_repo)
    return (stem + ".html" if suffix in PAGE_SUFFIXES else in_repo), hash_ + anchor


def _unpacked_links(source: str, notebook: str, zipped: set[str], book: str | None) -> str:
    """A Markdown cell's ``source`` with its links to the book made absolute (``book``: the published book's
    address), or, with no address, made plain text that names the site's page."""

    def markdown(m: re.Match[str]) -> str:
        where, anchor = _site_path(notebook, m["target"], zipped)
        if where is None:
            return m[0]
        if book is not None:
            return f"{m['bang']}[{m['text']}]({book}{where}{anchor}{m['title'] or ''})"
        return _without_address(m["text"], where)

    def html_element(m: re.Match[str]) -> str:
        where, anchor = _site_path(notebook, m["target"], zipped)
        if where is None:
            return m[0]
        if book is not None:
            closing = "" if m["inner"] is None else f"{m['inner']}</{m['tag']}>"
            return f'<{m["tag"]}{m["before"]}{m["attr"]}="{book}{where}{anchor}"{m["after"]}>{closing}'
        return _without_address(m["inner"] or "", where)

    return HTML_LINK.sub(html_element, MD_LINK.sub(markdown, source))


def _without_address(text: str, where: str) -> str:
    # With no published address a link cannot lead anywhere once the zip is unpacked: its words stay and
    # a page of the book is named, so the learner finds it on the site the kit came from.
    if where.endswith(".html"):
        return f"{text} (the course site's page {where})"
    return text


def homework_files(exercises: Path = EXERCISES, book: str | None = None) -> dict[str, bytes]:
    """The homework zip's members (path inside ``exercises`` -> bytes): the release, with every relative link
    of its Markdown cells that leads out of the zip made to work where the zip is unpacked. ``book`` is the
    published book's address, ending in ``/``: a link to ``chapters/<page>.md`` leads to
    ``<book>chapters/<page>.html``, one to ``kit/<file>`` to ``<book>kit/<file>``; with no address such a
    link becomes plain text. A notebook with nothing to change keeps its bytes.

    A locked cell changed gets nbgrader's checksum of its new text, so that ``nbgrader validate`` does
    not report it as edited by the learner (nbgrader's autograde puts the release's text back).
    """
    import nbformat
    from nbgrader.utils import compute_checksum

    files = {
        p.relative_to(exercises).as_posix(): p.read_bytes()
        for p in sorted(exercises.rglob("*"))
        if p.is_file() and ".ipynb_checkpoints" not in p.parts
    }
    zipped = set(files)
    for name in [n for n in files if n.endswith(".ipynb")]:
        nb = nbformat.reads(files[name].decode("utf-8"), as_version=nbformat.NO_CONVERT)
        changed = False
        for cell in nb.cells:
            if cell.cell_type != "markdown":
                continue
            source = _unpacked_links(cell.source, name, zipped, book)
            if source == cell.source:
                continue
            cell.source, changed = source, True
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("locked") and "checksum" in meta:
                meta["checksum"] = compute_checksum(cell)
        if changed:
            files[name] = (nbformat.writes(nb) + "\n").encode("utf-8")
    return files


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
        for package, paths in PACKAGE_DATA.items():
            for path in paths:
                shutil.copy2(path, src.joinpath(*package.split(".")) / path.name)
        data = "".join(
            f'"{package}" = [{", ".join(chr(34) + p.name + chr(34) for p in paths)}]\n'
            for package, paths in PACKAGE_DATA.items()
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
            f"include = [{', '.join(f'{chr(34)}{p}*{chr(34)}' for p in PACKAGES)}]\n\n"
            "[tool.setuptools.package-data]\n" + data,
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


VENV = "sdpa-course-env"


def install_lines() -> list[str]:
    """The two lines that install the kit, run in the folder that holds its files (a hub image runs them).

    The requirements file brings every package the wheel needs (:func:`kit_requirements`
    makes sure), so the wheel is installed without a second resolve; pip still checks its
    ``Requires-Python``, and on a Python too old that check is the one error the learner sees.
    """
    return [f"python -m pip install -r {REQUIREMENTS}", f"python -m pip install --no-deps {wheel_name()}"]


def learner_lines(system: str) -> list[str]:
    """What a learner types in the kit's folder on ``system`` ("unix": Linux or macOS; "windows":
    PowerShell): a virtual environment of its own for the course (a system's own Python may refuse
    packages installed beside its own), made active, then the two lines."""
    if system == "unix":
        make = [f"python3 -m venv {VENV}", f". {VENV}/bin/activate"]
    elif system == "windows":
        make = [f"py -m venv {VENV}", f"{VENV}\\Scripts\\Activate.ps1"]
    else:
        raise ValueError(f"system must be 'unix' or 'windows', not {system!r}")
    return [*make, *install_lines()]


#: The exchange folder the welcome page's example names: the course hub's (``hub/nbgrader_config.py``).
EXAMPLE_EXCHANGE = "/srv/nbgrader/exchange"
EXAMPLE_ASSIGNMENT = "hw1_dot_product_scores"


def exchange_lines(assignment: str, exchange: str) -> list[str]:
    """What a learner types, in the kit's environment, to fetch ``assignment`` from the course's nbgrader
    exchange (the folder ``exchange``, which their machine must see: a shared or mounted folder) and to
    submit it: the extra's install line (once), then nbgrader's own two commands, in one folder. nbgrader
    fetches into ``<assignment>/`` there and submits that folder, under the learner's login name."""
    course = shlex.quote(course_settings().course_id)
    where = f"--Exchange.root={shlex.quote(exchange)}"
    return [
        f"python -m pip install -r {EXCHANGE_REQUIREMENTS}",
        f"nbgrader fetch_assignment {shlex.quote(assignment)} --course {course} {where}",
        f"nbgrader submit {shlex.quote(assignment)} --course {course} {where}",
    ]


def download_html(prefix: str) -> str:
    """The kit's downloads (links relative to a page: ``prefix`` leads to ``kit/``) and its install lines."""
    from html import escape

    items = [
        (wheel_name(), "the course's Python package: lib, teaching and grading"),
        (REQUIREMENTS, "the packages the homework needs, in the ranges the course was tested with"),
        (HOMEWORK_ZIP, "the homework notebooks, one folder per assignment"),
        (EXCHANGE_REQUIREMENTS, "optional: nbgrader, to fetch and submit through your course's exchange"),
        (DOCKERFILE, "for instructors: a JupyterHub single-user image with the kit installed"),
    ]
    links = "".join(
        f'<li><a href="{escape(prefix + name)}" download><code>{escape(name)}</code></a>: {escape(what)}</li>'
        for name, what in items
    )
    unix, windows = (escape("\n".join(learner_lines(system))) for system in ("unix", "windows"))
    exchange = escape("\n".join(exchange_lines(EXAMPLE_ASSIGNMENT, EXAMPLE_EXCHANGE)))
    return (
        f'<div class="learner-kit"><p><strong>The learner kit</strong></p><ul>{links}</ul>'
        "<p>Install it into a virtual environment of its own (Python 3.11 or newer), in a terminal in "
        f"the folder that holds the files. On Linux or macOS:</p><pre><code>{unix}</code></pre>"
        f"<p>On Windows, in PowerShell:</p><pre><code>{windows}</code></pre>"
        "<p>In a new terminal, run the <code>activate</code> line again before <code>jupyter lab</code>.</p>"
        "<p><strong>Fetch and submit through nbgrader's exchange</strong> (optional, Linux or macOS: nbgrader's "
        "exchange does not run on Windows). If your instructor hands the homework out through nbgrader's "
        "exchange and your computer sees its folder (a shared or mounted folder), download "
        f"<code>{escape(EXCHANGE_REQUIREMENTS)}</code> too and, with the environment active, run the first line "
        "once; then, in the folder where you keep the homework, fetch an assignment, work on it in the folder "
        "the fetch makes, and submit it from the same place. Put in your assignment and the exchange folder "
        f"your instructor names:</p><pre><code>{exchange}</code></pre>"
        "<p>nbgrader submits under your login name. You may submit again: the exchange keeps every "
        "submission, and your instructor says which one is graded. Without the exchange, hand the notebook "
        "in as its <em>Start here</em> says.</p></div>"
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
    outputs = [out / n for n in (wheel_name(), REQUIREMENTS, EXCHANGE_REQUIREMENTS, HOMEWORK_ZIP, DOCKERFILE)]
    if not force and stamp.exists() and stamp.read_text() == want and all(p.exists() for p in outputs):
        print(f"kit: up to date in {out}")
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    build_wheel(out)
    header = [
        "# The packages the homework needs, in the ranges the course was tested with, on Python 3.11 or newer.",
        f"# Install: {install_lines()[0]}, then {install_lines()[1]}",
        "# On an older Python this file installs nothing, and the course wheel says which Python it needs.",
    ]
    (out / REQUIREMENTS).write_text("\n".join(header + kit_requirements()) + "\n", encoding="utf-8")
    (out / EXCHANGE_REQUIREMENTS).write_text(
        "\n".join(
            [
                "# Optional: what fetching and submitting through the course's nbgrader exchange needs, on top of",
                f"# {REQUIREMENTS}. Install: {exchange_lines('ASSIGNMENT', 'EXCHANGE')[0]}",
                *exchange_requirements(),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    _write_zip(out / HOMEWORK_ZIP, homework_files(EXERCISES, course_settings().feedback.book_url))
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
