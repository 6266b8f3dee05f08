"""The suite and the sources say what they do, and nothing else.

Two scans, each with a control that proves it finds a planted offender:

- every test and every fixture in ``tests/*.py`` uses each parameter it takes.
  A fixture a test asks for but never reads is set up for nothing (a built
  page, a browser, a scratch folder) and misleads the reader about what the
  test checks. A fixture needed only for what it does (sets an environment,
  patches a function) goes in ``@pytest.mark.usefixtures(...)``, which says so.
- no committed source file tells the story of its own changes (a tracker's
  issue number, what the code did before): a comment says why the code is as
  it is, and the history lives in git.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# ---------------------------------------------------------------- every parameter of a test or fixture is used


def _is_fixture(decorator: ast.expr) -> bool:
    """``@pytest.fixture``, ``@pytest.fixture(...)`` or ``@fixture``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "fixture") or (
        isinstance(target, ast.Name) and target.id == "fixture"
    )


def unused_parameters(path: Path) -> list[str]:
    """``file:line: name never uses parameter p`` for each test (``test*``) and
    fixture in ``path`` that takes a parameter its body never names."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        fixture = any(_is_fixture(d) for d in node.decorator_list)
        if not (fixture or node.name.startswith("test")):
            continue
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        named = {n.id for statement in node.body for n in ast.walk(statement) if isinstance(n, ast.Name)}
        kind = "fixture" if fixture else "test"
        for argument in arguments:
            if argument.arg not in ("self", "cls") and argument.arg not in named:
                found.append(f"{path.name}:{node.lineno}: {kind} {node.name} never uses parameter {argument.arg}")
    return found


def test_every_test_and_fixture_uses_the_parameters_it_takes():
    offenders = [line for path in sorted(TESTS.glob("*.py")) for line in unused_parameters(path)]
    assert not offenders, (
        "drop these parameters, or use @pytest.mark.usefixtures(...) for a fixture needed only for its effect:\n"
        + "\n".join(offenders)
    )


def test_the_parameter_scan_finds_a_planted_offender(tmp_path):
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        "import pytest\n"
        "\n"
        "\n"
        "@pytest.fixture\n"
        "def built(request, tmp_path):\n"
        "    return tmp_path\n"
        "\n"
        "\n"
        "def test_ignores_its_page(page, built):\n"
        "    assert built\n"
        "\n"
        "\n"
        '@pytest.mark.usefixtures("built")\n'
        "def test_reads_in_a_nested_function(page):\n"
        "    assert (lambda: page)()\n"
        "\n"
        "\n"
        "def helper(unused):\n"
        "    return 1\n",
        encoding="utf-8",
    )
    assert unused_parameters(planted) == [
        "test_planted.py:5: fixture built never uses parameter request",
        "test_planted.py:9: test test_ignores_its_page never uses parameter page",
    ]


# ---------------------------------------------------------------- no source narrates its history

#: The committed files scanned: these folders and the repository's top level.
FOLDERS = (
    ".ci",
    "_ext",
    "appendix",
    "benchmarks",
    "binder",
    "chapters",
    "classgrader",
    "devtools",
    "hub",
    "nbgrader_tools",
    "requirements",
    "sdpa_course",
    "solution_book",
    "tests",
)
SOURCE_SUFFIXES = (".py", ".toml", ".yml", ".yaml", ".cfg")
#: Sources without a suffix: the command-line entry point and the CI script.
SOURCE_FILES = ("course", ".ci/run")

#: Phrases that tell history. Each is written so that it does not match its own line here.
HISTORY = re.compile(
    r"\bissues?\s+#?\d+"  # a tracker's issue number
    r"|[(]issue\b"  # an issue cited in parentheses
    r"|\bbefore\s+this\s+change\b"
    r"|\brenovat(?:ion|ed)\b",
    re.IGNORECASE,
)


def committed_sources() -> list[Path]:
    """The committed source files of :data:`FOLDERS` and of the top level."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *FOLDERS, ":(top,glob)*"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = [name for name in listed.split("\0") if name]
    return sorted(ROOT / n for n in names if n in SOURCE_FILES or Path(n).suffix in SOURCE_SUFFIXES)


def history_phrases(paths: list[Path], root: Path) -> list[str]:
    """``file:line: phrase`` for each line of ``paths`` that names an issue or tells history."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in HISTORY.finditer(line):
                found.append(f"{path.relative_to(root)}:{number}: {match.group(0)!r} in {line.strip()}")
    return found


def test_no_committed_source_narrates_its_history():
    sources = committed_sources()
    assert ROOT / "course" in sources and ROOT / ".ci" / "run" in sources and ROOT / "pyproject.toml" in sources
    assert any(p.is_relative_to(ROOT / "classgrader") for p in sources)
    hits = history_phrases(sources, ROOT)
    assert not hits, "say why the code is as it is (git keeps the history):\n" + "\n".join(hits)


def test_the_history_scan_finds_a_planted_phrase(tmp_path):
    # Each phrase is split in two here so that this file does not match itself.
    planted = {
        2: ("# see Issue ", "11, item 3"),
        3: ("y = 2  # (", "issue: a sum without keepdims)"),
        4: ('"""As it did before this ', 'change."""'),
        5: ("# a renov", "ation"),
    }
    clean = ["x = 1  # the shift keeps exp from overflowing", "# the tissue 4 sample issues a warning"]
    lines = [clean[0], *("".join(planted[n]) for n in sorted(planted)), clean[1]]
    (tmp_path / "planted.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    hits = history_phrases([tmp_path / "planted.py"], tmp_path)
    assert [h.split(":")[:2] for h in hits] == [["planted.py", str(n)] for n in sorted(planted)], hits
    for hit, n in zip(hits, sorted(planted)):
        assert hit.endswith("".join(planted[n]).strip()), hit
