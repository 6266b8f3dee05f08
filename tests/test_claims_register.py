"""The claims register (``appendix/claims*.yml``) is complete and honest in form.

Every entry names a page and a claim of that page; the claim is backed either
by a test that exists or by a source that the bibliography holds (or an https
address) together with where in that source the reader finds it. The claim
is quoted from the page's source, unless the entry names the ``value`` it
guards instead: a name (or a list of names) that the page glues with
myst-nb's ``glue`` (and pastes into its text, or states in words), and that
the entry's test reads.
A claim whose number is glued is not re-typed in the register, and a changed
number needs no edit here. Every ``appendix/claims*.yml`` file is read, so
the registers of other chapters are held to the same rules.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REGISTERS = sorted((ROOT / "appendix").glob("claims*.yml"))
BIB_KEY = re.compile(r"^@\w+\s*\{\s*([^,\s]+)\s*,", re.MULTILINE)
FIELDS = {"id", "page", "claim", "value", "test", "source", "where"}


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _entries() -> list[tuple[str, int, dict]]:
    found = []
    for path in REGISTERS:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert isinstance(data, list) and data, f"{path.name} must be a non-empty YAML list"
        found += [(path.name, i, entry) for i, entry in enumerate(data)]
    return found


ENTRIES = _entries()


@cache
def _bib_keys() -> frozenset[str]:
    return frozenset(BIB_KEY.findall((ROOT / "references.bib").read_text(encoding="utf-8")))


@cache
def _functions(test_file: Path) -> dict[str, str]:
    """The test file's top-level functions, each with its source."""
    text = test_file.read_text(encoding="utf-8")
    tree = ast.parse(text)
    return {
        n.name: ast.get_source_segment(text, n) or ""
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def _values(entry: dict) -> list[str]:
    value = entry.get("value", [])
    return [value] if isinstance(value, str) else value


def test_the_register_exists_and_holds_entries():
    assert ROOT / "appendix" / "claims.yml" in REGISTERS
    assert len(ENTRIES) >= 20


def test_ids_are_unique_across_all_registers():
    seen: dict[str, str] = {}
    for name, i, entry in ENTRIES:
        key = entry.get("id")
        assert isinstance(key, str) and re.fullmatch(r"[a-z0-9][a-z0-9-]*", key), f"{name} entry {i}: bad id {key!r}"
        assert key not in seen, f"id {key!r} appears in {seen[key]} and {name}"
        seen[key] = name


@pytest.mark.parametrize(("register", "index", "entry"), ENTRIES, ids=[e.get("id", "?") for _, _, e in ENTRIES])
def test_entry(register, index, entry):
    where = f"{register} entry {index} ({entry.get('id')})"
    assert isinstance(entry, dict), where
    assert set(entry) <= FIELDS, f"{where}: unknown fields {set(entry) - FIELDS}"
    for field in ("id", "page", "claim"):
        assert isinstance(entry.get(field), str) and entry[field].strip(), f"{where}: {field} is missing or empty"

    page = ROOT / entry["page"]
    assert page.is_file(), f"{where}: no page {entry['page']}"
    text = page.read_text(encoding="utf-8")
    values = _values(entry)
    assert isinstance(values, list) and all(isinstance(v, str) and v for v in values), f"{where}: bad value"
    if not values:
        assert _normalised(entry["claim"]) in _normalised(text), (
            f"{where}: the claim is not in {entry['page']}: {entry['claim']!r}"
        )
    for name in values:
        assert re.search(rf"""\bglue\(\s*["']{re.escape(name)}["']""", text), f"{where}: the page glues no {name!r}"

    has_test, has_source = "test" in entry, "source" in entry
    assert has_test != has_source, f"{where}: give exactly one of test and source"
    if has_test:
        m = re.fullmatch(r"(tests/[\w/]+\.py)::(\w+)", str(entry["test"]))
        assert m, f"{where}: test must read tests/file.py::function, got {entry['test']!r}"
        test_file = ROOT / m[1]
        assert test_file.is_file(), f"{where}: no test file {m[1]}"
        assert m[2].startswith("test") and m[2] in _functions(test_file), f"{where}: {m[1]} defines no {m[2]}"
        assert "where" not in entry, f"{where}: 'where' belongs to a source"
        for name in values:
            assert f'"{name}"' in _functions(test_file)[m[2]], f"{where}: {m[2]} does not read the value {name!r}"
    else:
        assert not values, f"{where}: a glued value is guarded by a test, not a source"
        source = entry["source"]
        assert isinstance(source, str) and (source in _bib_keys() or re.fullmatch(r"https://\S+", source)), (
            f"{where}: source {source!r} is neither a key of references.bib nor an https address"
        )
        assert isinstance(entry.get("where"), str) and entry["where"].strip(), f"{where}: say where in the source"
