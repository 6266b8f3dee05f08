"""Build once more and check that this build ran no chapter and rebuilt no JupyterLite.

Run by .ci/run after the test suite, which builds the book before its tests:
nothing has changed since, so nothing may run again. The evidence is the tools'
own account, not the time taken:

- the execution cache (``_build/.jupyter_cache``) gains no record, and myst-nb
  prints no "Executing notebook" line;
- the in-browser Jupyter's build (``python -m lite``, ``_ext/lite/``) prints
  "lite: unchanged": JupyterLite's own doit wrote nothing new.

Usage: .venv/bin/python .ci/check_nothing_rebuilt.py (from anywhere). Exit 0 when
nothing was rebuilt; 1, with the build's output and what ran, otherwise.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "_build" / ".jupyter_cache"


def cache_records() -> dict[int, str]:
    """The execution cache's records: id -> the notebook it was made from."""
    if not (CACHE / "global.db").is_file():
        return {}
    from jupyter_cache import get_cache

    return {record.pk: record.uri for record in get_cache(str(CACHE)).list_cache_records()}


def what_ran(log: str, before: dict[int, str], after: dict[int, str]) -> list[str]:
    """What the build log and the cache say this build executed or rebuilt."""
    problems = [f"executed and cached: {uri}" for pk, uri in sorted(after.items()) if pk not in before]
    problems += [f"build log: {line.strip()}" for line in log.splitlines() if "Executing notebook" in line]
    if not any(line.startswith("lite: unchanged") for line in log.splitlines()):
        problems.append("the JupyterLite step did not report 'lite: unchanged': it rebuilt its content")
    return problems


def main() -> int:
    before = cache_records()
    done = subprocess.run(
        [str(ROOT / "course"), "build"], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    log = done.stdout + done.stderr
    if done.returncode != 0:
        print(log)
        print(f"ci: the rebuild failed (exit {done.returncode})", file=sys.stderr)
        return 1
    problems = what_ran(log, before, cache_records())
    if problems:
        print(log)
        print("ci: a rebuild with nothing changed did work again:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print("ci: a rebuild after the tests executed no chapter and rebuilt no JupyterLite content")
    return 0


if __name__ == "__main__":
    sys.exit(main())
