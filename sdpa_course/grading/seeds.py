"""The seed of each learner's hidden tests: the same file always gets the same inputs.

Rule (one home, used by ``./course grade`` and by the hidden test cells when
``nbgrader autograde`` runs them)::

    seed = first 31 bits of HMAC-SHA256(course secret, "<assignment>\\0<student>")

so a regrade is reproducible, each learner gets their own variant of the
hidden inputs, and the class grader's two runs (the scoring run and the
nbgrader-style record run) see the same inputs.

The course secret
-----------------
Looked for, in order:

1. the environment variable ``COURSE_GRADING_SECRET`` (its text is the secret);
2. the file named by ``c.CourseGrading.secret_file`` in the course's
   ``nbgrader_config.py`` (relative to the course folder, ``~`` allowed).
   ``./course grade`` reads it with the rest of its settings
   (:mod:`classgrader.settings`) and passes it to :func:`course_secret`; a
   hidden test cell under ``nbgrader autograde`` reads only that one line
   (:func:`secret_file_named`).
   A file that is named but missing or empty is an error with a message
   saying how to make one (``python -m sdpa_course.grading new-secret PATH``);
3. nothing configured: an error (:class:`SecretMissing`) saying how to make
   one. There is no public default: a seed anyone could compute from the
   course id would make the hidden inputs predictable. The first
   ``./course grade`` makes the secret (:mod:`classgrader.assignments.secret`) in a
   private file outside the course folder and names it in
   ``nbgrader_config.py``, so that ``nbgrader autograde`` reads it too.

The secret file must never be committed, released or put in ``exercises/``
(``.gitignore`` lists ``grading-secret*``).

Where a hidden check runs
-------------------------
:func:`hidden_seed` decides the seed of an in-notebook hidden check:

- ``GRADING_HIDDEN_SEED`` set (the class grader's record run): that seed;
- the notebook runs in ``<course>/autograded/<student>/<assignment>/``
  (``nbgrader autograde``): the seed of that student;
- anywhere else (a learner practising): a fresh random seed, so that the
  learner's own run of the hidden checks sees new inputs every time.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traitlets.config import Config

ENV_SECRET = "COURSE_GRADING_SECRET"
ENV_SEED = "GRADING_HIDDEN_SEED"
CONFIG = "nbgrader_config.py"
#: The setting naming the course secret's file: ``c.CourseGrading.secret_file``.
SECTION, SECRET_FILE = "CourseGrading", "secret_file"


class SecretMissing(RuntimeError):
    """The configured course secret cannot be read; the message says how to fix it."""


def seed_for(secret: bytes, assignment: str, student: str) -> int:
    """The hidden-test seed of one learner on one assignment (31 bits)."""
    if not isinstance(secret, bytes) or not secret:
        raise ValueError("the course secret must be non-empty bytes")
    mac = hmac.new(secret, f"{assignment}\0{student}".encode(), hashlib.sha256).digest()
    return int.from_bytes(mac[:4], "big") & 0x7FFFFFFF


def read_config(course: Path) -> Config:
    """What the course's ``nbgrader_config.py`` says, unchecked (empty when there is no file)."""
    # traitlets is imported here, not above: a learner practising never reads the course's config.
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(course) / CONFIG
    if not path.is_file():
        return Config()
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def secret_file_named(course: Path) -> str:
    """``c.CourseGrading.secret_file`` of the course's ``nbgrader_config.py`` (``""`` when unset)."""
    config = read_config(course)
    named = config[SECTION].get(SECRET_FILE, "") if SECTION in config else ""
    if not isinstance(named, str):
        raise SecretMissing(f"{SECTION}.{SECRET_FILE} in {Path(course) / CONFIG} must be a file's name, not {named!r}")
    return named


def course_secret(course: Path, named: str | None = None) -> tuple[bytes, str]:
    """``(secret, where it came from)`` for the course folder ``course``.

    ``named`` is ``c.CourseGrading.secret_file`` as the caller read it (read
    from the course's config when ``None``). Raises :class:`SecretMissing`
    when no secret is configured, or when the configured file cannot be read.
    """
    env = os.environ.get(ENV_SECRET)
    if env:
        return env.encode(), f"the environment variable {ENV_SECRET}"
    if named is None:
        named = secret_file_named(course)
    if named.strip():
        path = Path(os.path.expanduser(named))
        path = path if path.is_absolute() else Path(course) / path
        try:
            text = path.read_text().strip()
        except OSError as exc:
            raise SecretMissing(
                f"the course secret file {path} (c.CourseGrading.secret_file in {CONFIG}) cannot be read "
                f"({exc.strerror or exc}). Make one with: python -m sdpa_course.grading new-secret {path}  "
                "(keep it: regrades need the same secret; never commit or release it)"
            ) from None
        if not text:
            raise SecretMissing(
                f"the course secret file {path} is empty; make one with: "
                f"python -m sdpa_course.grading new-secret {path}"
            )
        return text.encode(), f"the file {path}"
    raise SecretMissing(
        f"no course secret is configured for {Path(course)}, so the hidden tests have no seed. "
        "Run ./course grade once (it makes a private secret file and names it in "
        f"{CONFIG}), or make one with: python -m sdpa_course.grading new-secret "
        f"~/.config/sdpa-course/<course id>/grading-secret and add the line "
        f'c.CourseGrading.secret_file = "<that path>" to {CONFIG}, or set {ENV_SECRET}'
    )


def student_seed(course: Path, assignment: str, student: str) -> int:
    """The seed of ``student``'s hidden tests of ``assignment`` in this course."""
    return seed_for(course_secret(course)[0], assignment, student)


def autograde_location(cwd: Path | None = None) -> tuple[Path, str, str] | None:
    """``(course, student, assignment)`` when ``cwd`` is ``<course>/autograded/<student>/<assignment>``."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    parts = cwd.resolve().parts
    if len(parts) >= 4 and parts[-3] == "autograded":
        course = Path(*parts[:-3])
        if (course / CONFIG).is_file():
            return course, parts[-2], parts[-1]
    return None


def hidden_seed(assignment: str) -> int:
    """The seed of an in-notebook hidden check (see the module docstring)."""
    env = os.environ.get(ENV_SEED)
    if env:
        try:
            return int(env)
        except ValueError:
            raise SecretMissing(f"{ENV_SEED} must be an integer; it is {env[:40]!r}") from None
    where = autograde_location()
    if where is not None:
        course, student, _ = where
        return student_seed(course, assignment, student)
    return secrets.randbits(31)


def new_secret_file(path: Path) -> None:
    """Write a fresh random secret to a new file ``path``, readable by its owner only (mode 600).

    Raises :class:`FileExistsError` if ``path`` exists: an existing secret is
    never overwritten, since a regrade needs the same one.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(secrets.token_hex(32) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "new-secret":
        path = Path(os.path.expanduser(argv[1]))
        if path.exists():
            print(f"{path} exists; not overwritten (regrades need the same secret)", file=sys.stderr)
            return 1
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        new_secret_file(path)
        print(
            f"wrote a new course secret to {path}; name it in nbgrader_config.py: "
            f"c.CourseGrading.secret_file = {str(path)!r}"
        )
        return 0
    print(
        "usage: python -m sdpa_course.grading new-secret PATH   (writes a new course secret file at PATH)",
        file=sys.stderr,
    )
    return 2
