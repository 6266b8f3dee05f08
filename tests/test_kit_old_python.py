"""The learner kit on a Python older than the course promises: one clear sentence.

The kit's lines are run as a learner runs them, in a fresh virtual environment
of the newest Python this machine has below the course's floor (pyproject's
``requires-python``). The requirements file installs nothing there (each line
carries the floor as a marker), and the wheel stops with pip's own message
naming the learner's Python and the one wanted: no resolver error over some
package's versions. Nothing is fetched (``PIP_NO_INDEX``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from built_book import HTML, ROOT
from packaging.specifiers import SpecifierSet

from nbgrader_tools import kit

FLOOR = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"])


def older_python() -> tuple[str, str] | None:
    """(interpreter, version) of the newest Python on this machine that the course does not promise."""
    candidates = [shutil.which(f"python3.{minor}") for minor in range(6, 11)]
    if shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        candidates += sorted(str(p) for p in Path(root).glob("versions/*/bin/python3")) if root else []
    found = []
    for candidate in filter(None, candidates):
        asked = "import sys; print('%d.%d.%d' % sys.version_info[:3])"
        got = subprocess.run([candidate, "-c", asked], capture_output=True, text=True)
        version = got.stdout.strip()
        if got.returncode == 0 and version not in FLOOR:
            found.append((tuple(map(int, version.split("."))), candidate, version))
    return (max(found)[1], max(found)[2]) if found else None


OLDER = older_python()


@pytest.mark.skipif(OLDER is None, reason="this machine has no Python older than the course's floor")
def test_a_python_too_old_gets_one_sentence_naming_both_versions(tmp_path):
    assert OLDER is not None
    python, version = OLDER
    folder = HTML / "kit"
    if not (folder / kit.wheel_name()).is_file():
        pytest.fail(f"{folder.relative_to(ROOT)} holds no kit: build the book first (./course build)")
    for name in (kit.REQUIREMENTS, kit.wheel_name()):
        shutil.copy2(folder / name, tmp_path)
    venv = tmp_path / kit.VENV
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env |= {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    own = str(venv / "bin" / "python")  # the venv made active: its python is the lines' python

    def run(words: list[str]) -> subprocess.CompletedProcess:
        assert words[0] == "python", words
        return subprocess.run([own, *words[1:]], cwd=tmp_path, env=env, capture_output=True, text=True)

    first, second = (run(line.split()) for line in kit.install_lines())
    # The requirements file: nothing for this Python, and no error.
    assert first.returncode == 0, first.stderr
    installed = run(["python", "-m", "pip", "freeze"]).stdout.split()  # a fresh venv lists nothing
    assert not installed, f"the requirements file installed {installed} on a Python it does not serve"
    # The wheel: one error, naming the learner's Python and the floor.
    assert second.returncode != 0
    errors = [line for line in (second.stdout + second.stderr).splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1, errors
    assert version in errors[0] and str(FLOOR) in errors[0], errors[0]
