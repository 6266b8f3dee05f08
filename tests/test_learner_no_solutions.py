"""Nothing a learner receives holds a solution or a hidden test.

What learners receive is the built site (``_build/html``: pages, ``_sources``,
search index, downloads), the learner kit in it (``kit/``: the wheel and the
homework zip, unpacked here) and the in-browser Jupyter (``lite/``, with its
wheels unpacked). Every line of at least 20 characters (whitespace
normalised) inside a ``BEGIN/END SOLUTION`` or ``BEGIN/END HIDDEN TESTS``
region of ``solutions/``, and every paragraph of ``solutions/*/reasoning.md``,
is searched for in all of it; lines that also stand in ``lib`` (the book's own
reference code, public by design) are allowed. So is a line found in a copy
of a public source that holds it: a file of the kit's packages (``lib``,
``teaching``, ``grading``: public by design, the checks' own helpers compute
the same things a solution does) inside a wheel, or a chapter's page, source or
notebook when that chapter teaches the line. Nowhere else: a homework page, the
homework zip, any other page. ``grep -F`` does the search (Aho-Corasick over
all the needles at once).
"""

from __future__ import annotations

import html
import io
import json
import re
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest
from built_book import HTML, ROOT

MIN_CHARS = 20
REGIONS = (("BEGIN SOLUTION", "END SOLUTION"), ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS"))
TAG = re.compile(r"<[^>]+>")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def solution_lines() -> tuple[dict[str, str], int]:
    """normalised line -> where it comes from, and the number of solution and hidden-test cells read."""
    lines: dict[str, str] = {}
    cells = 0
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        for index, cell in enumerate(nb.cells):
            inside = False
            counted = False
            for line in cell.source.splitlines():
                if any(begin in line for begin, _ in REGIONS):
                    inside = True
                    cells += not counted
                    counted = True
                elif any(end in line for _, end in REGIONS):
                    inside = False
                elif inside and len(_norm(line)) >= MIN_CHARS:
                    lines.setdefault(_norm(line), f"{path.relative_to(ROOT)} cell {index}")
    return lines, cells


def reasoning_paragraphs() -> dict[str, str]:
    found = {}
    for path in sorted((ROOT / "solutions").glob("*/reasoning.md")):
        for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            text = _norm(para)
            if len(text) >= MIN_CHARS:
                found.setdefault(text, str(path.relative_to(ROOT)))
    return found


def lib_text() -> str:
    return _norm("\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "sdpa_course" / "lib").rglob("*.py"))))


PUBLIC_PACKAGES = ("sdpa_course/lib/", "sdpa_course/teaching/", "sdpa_course/grading/")
CHAPTER = re.compile(r"(?:^|/)chapters/([^/.!]+)\.")


def public_origin(unit: str) -> Path | None:
    """The public source a searched file is a copy of, if any: a package file inside a
    wheel, or a chapter (its page, its ``_sources`` copy, its in-browser notebook)."""
    if ".whl!" in unit:
        member = unit.split(".whl!", 1)[1]
        if member.startswith(PUBLIC_PACKAGES):
            return ROOT / member
        return None
    if "!" in unit:
        return None
    found = CHAPTER.search(unit)
    return ROOT / "chapters" / f"{found.group(1)}.md" if found else None


def allowed(needle: str, unit: str, cache: dict[Path, str]) -> bool:
    origin = public_origin(unit)
    if origin is None or not origin.is_file():
        return False
    if origin not in cache:
        cache[origin] = _norm(origin.read_text(encoding="utf-8"))
    return needle in cache[origin]


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _text_forms(name: str, data: bytes) -> list[str]:
    """The text of a file as a learner could read it: raw, without HTML tags, and its JSON strings."""
    if b"\0" in data[:4096]:
        return []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return []
    forms = [text]
    if name.endswith((".html", ".htm", ".xml", ".svg")) or "<" in text[:2000]:
        forms.append(html.unescape(TAG.sub("", text)))
    if name.endswith((".json", ".ipynb")):
        try:
            forms.append("\n".join(_strings(json.loads(text))))
        except ValueError:
            pass
    return forms


def _units(site: Path) -> list[tuple[str, str]]:
    """(name, normalised text) of every file of the site and every member of its zips and wheels."""
    units = []

    def add(name: str, data: bytes, depth: int = 0) -> None:
        if name.endswith((".whl", ".zip")) and depth < 2:
            try:
                with zipfile.ZipFile(io.BytesIO(data)) as zf:
                    for member in zf.namelist():
                        add(f"{name}!{member}", zf.read(member), depth + 1)
            except zipfile.BadZipFile:
                pass
            return
        for form in _text_forms(name, data):
            units.append((name, _norm(form)))

    for path in sorted(site.rglob("*")):
        if path.is_file():
            add(str(path.relative_to(site)), path.read_bytes())
    return units


def scan(site: Path, tmp: Path) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Hits (needle -> files holding it) and counts of what was searched."""
    lines, cells = solution_lines()
    paragraphs = reasoning_paragraphs()
    public = lib_text()
    needles = {n: src for n, src in {**lines, **paragraphs}.items() if n not in public}
    units = _units(site)
    (tmp / "needles.txt").write_text("\n".join(needles) + "\n", encoding="utf-8")
    names = []
    with (tmp / "haystack.txt").open("w", encoding="utf-8") as out:
        for name, text in units:
            names.append(name)
            out.write(text.replace("\n", " ") + "\n")
    done = subprocess.run(
        ["grep", "-F", "-n", "-o", "-f", str(tmp / "needles.txt"), str(tmp / "haystack.txt")],
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1), done.stderr
    hits: dict[str, list[str]] = {}
    cache: dict[Path, str] = {}
    in_public_copies = 0
    for row in done.stdout.splitlines():
        number, _, needle = row.partition(":")
        unit = names[int(number) - 1]
        if allowed(needle, unit, cache):
            in_public_copies += 1
        else:
            hits.setdefault(needle, []).append(unit)
    counts = {
        "files": len({n.split("!", 1)[0] for n in names}),
        "archive members and files searched": len(set(names)),
        "solution and hidden-test cells": cells,
        "solution lines": len(lines),
        "reasoning paragraphs": len(paragraphs),
        "allowed because they stand in lib": len(lines) + len(paragraphs) - len(needles),
        "found in copies of a public source that holds them": in_public_copies,
    }
    return hits, counts


def test_the_scan_finds_a_planted_solution_line(tmp_path):
    lines, _ = solution_lines()
    public = lib_text()
    needle = next(n for n in lines if n not in public)
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_text(f"<pre><span>{html.escape(needle)}</span></pre>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("nb.ipynb", json.dumps({"cells": [{"source": ["x = 1\n", "    " + needle + "\n"]}]}))
    (site / "kit.zip").write_bytes(buffer.getvalue())
    # a copy of a public source is no excuse for a line that source does not hold
    (site / "chapters").mkdir()
    (site / "chapters" / "01_self_attention.html").write_text(f"<p>{html.escape(needle)}</p>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("sdpa_course/grading/hw2.py", f"x = 1\n{needle}\n")
    (site / "course-0.1-py3-none-any.whl").write_bytes(buffer.getvalue())
    hits, counts = scan(site, tmp_path)
    assert sorted(set(hits[needle])) == [
        "chapters/01_self_attention.html",
        "course-0.1-py3-none-any.whl!sdpa_course/grading/hw2.py",
        "kit.zip!nb.ipynb",
        "page.html",
    ]
    assert counts["files"] == 4


def test_nothing_a_learner_receives_holds_a_solution(tmp_path):
    for part in ("index.html", "kit", "lite"):
        if not (HTML / part).exists():
            pytest.fail(f"_build/html/{part} does not exist: build the book first (./course build)")
    hits, counts = scan(HTML, tmp_path)
    print("no-solution scan:", ", ".join(f"{k}: {v}" for k, v in counts.items()), f", hits: {len(hits)}")
    assert counts["solution and hidden-test cells"] >= 9 * 2 and counts["files"] > 100
    assert hits == {}, "\n".join(f"{needle!r} in {files[:5]}" for needle, files in hits.items())
