"""The course secret, made by the first ``./course grade`` when none is configured.

The hidden inputs' seeds are an HMAC of the course secret
(:mod:`grading.seeds`), so grading needs one and never falls back to a public
value. When neither ``COURSE_GRADING_SECRET`` nor
``c.CourseGrading.secret_file`` names one, :func:`ensure_secret` writes a
fresh random secret to a private file outside the course folder::

    $XDG_CONFIG_HOME/sdpa-course/<course id>/grading-secret   (default ~/.config)

(file mode 600, its folders mode 700; an existing file is used, never
overwritten) and appends ``c.CourseGrading.secret_file = "<that path>"`` to the
course's ``nbgrader_config.py``, where the hidden test cells of ``nbgrader
autograde`` read it too, so that both graders keep giving the same inputs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sdpa_course.grading import seeds

APP = "sdpa-course"
FILE_NAME = "grading-secret"


def default_path(course_id: str) -> Path:
    """Where the course secret of ``course_id`` goes when none is configured."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    # The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    folder = re.sub(r"[^A-Za-z0-9._-]", "_", course_id).lstrip(".") or "default_course"
    return root / APP / folder / FILE_NAME


def _private_folder(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents, each readable by its owner only (mode 700)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(mode=0o700)
        os.chmod(path, 0o700)  # mkdir's mode is masked by the umask
    return missing


def config_value(path: Path) -> str:
    """How ``path`` is written in the config: ``~/...`` when under the home folder, so it holds on any machine."""
    home = Path.home()
    try:
        return "~/" + path.relative_to(home).as_posix()
    except ValueError:
        return str(path)


def ensure_secret(course: Path, course_id: str, named: str) -> tuple[str, str | None]:
    """Make, record and check the course secret if none is configured.

    ``named`` is ``c.CourseGrading.secret_file`` as read. Returns the secret
    file's name as now configured, and what to tell the instructor (``None``
    when a secret was already configured, whose problems
    :func:`grading.seeds.course_secret` reports).
    """
    course = Path(course)
    if os.environ.get(seeds.ENV_SECRET) or named.strip():
        return named, None
    path = default_path(course_id)
    if path.exists() or path.is_symlink():
        made = f"used the existing course secret file {path} (never overwritten)"
    else:
        folders = _private_folder(path.parent)
        seeds.new_secret_file(path)
        where = ", in new folders of mode 700" if folders else ""
        made = f"made a new course secret in {path} (mode 600{where}, outside the course folder)"
    value = config_value(path)
    line = f"c.CourseGrading.secret_file = {value!r}"
    config = course / seeds.CONFIG
    text = config.read_text() if config.is_file() else "c = get_config()\n"
    if text and not text.endswith("\n"):
        text += "\n"
    text += (
        "\n# The course secret that seeds the hidden tests (sdpa_course/grading/seeds.py), made by the first\n"
        "# ./course grade; nbgrader autograde's hidden test cells read it from here too.\n"
        f"{line}\n"
    )
    config.write_text(text)
    seeds.course_secret(course, value)  # the recorded file must now be readable: raises SecretMissing if not
    return value, (
        f"classgrader: no course secret was configured, so this grading {made}. It is recorded in {config} as "
        f"{line}, where nbgrader autograde's hidden test cells read it too. Keep it (a regrade needs the same "
        "secret) and never commit or release it. To grade on another machine, copy it there with mode 600 to "
        f"the same place (or name its place in c.CourseGrading.secret_file, or set {seeds.ENV_SECRET})."
    )
