"""The solutions book (``./course solutions``): built apart, never in the learners' book.

- nbgrader's release never carries a reasoning file (``*.md`` in the source
  folder is ignored): the release is generated here and checked;
- the book builds with warnings as errors, and each assignment's page holds
  its reasoning, the solution's own code, the grader's answer to every
  mistake shown, and no hidden test;
- the learners' book (``_toc.yml`` and the site that ``./course build`` made)
  neither includes nor links to any of it.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from built_book import HTML, built_page
from notebook_lines import hidden_test_lines

from nbgrader_tools import solution_book
from nbgrader_tools.cells import nbgrader_meta

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENTS = solution_book.assignments()


def text_of(page: str) -> str:
    """The visible text of an HTML page, whitespace collapsed."""
    page = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", page)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def plain_phrases(markdown: str) -> list[str]:
    """Runs of at least six plain words (no markup) from a piece of reasoning: they must show on the page."""
    found = []
    for paragraph in re.split(r"\n\s*\n", markdown):
        if paragraph.lstrip().startswith("#"):
            continue  # a heading: its text is checked with the paragraph that follows
        text = " ".join(paragraph.split())
        found += [m.group(0).strip() for m in re.finditer(r"(?:[A-Za-z,;]+ ){5,}[A-Za-z]+", text)]
    return found[:3]


def hidden_lines(assignment: str) -> list[str]:
    return hidden_test_lines(nbformat.read(REPO / "solutions" / assignment / f"{assignment}.ipynb", as_version=4))


def solution_lines(assignment: str) -> list[str]:
    nb = nbformat.read(REPO / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    lines = []
    for cell in nb.cells:
        if nbgrader_meta(cell).get("solution"):
            lines += [s.strip() for s in cell.source.splitlines() if len(s.strip()) > 10 and "###" not in s]
    return lines


def test_every_assignment_has_a_reasoning_file_with_a_title_and_mistakes():
    assert len(ASSIGNMENTS) == 12
    for name in ASSIGNMENTS:
        opening, after = solution_book.read_reasoning(REPO / "solutions" / name / "reasoning.md")
        assert opening[0].source.startswith("# "), name
        assert "end" in after and any("grader_says(" in c.source for c in after["end"]), name
        answer_ids = {
            nbgrader_meta(c).get("grade_id")
            for c in nbformat.read(REPO / "solutions" / name / f"{name}.ipynb", as_version=4).cells
            if nbgrader_meta(c).get("solution")
        }
        assert answer_ids <= set(after), (name, answer_ids - set(after))  # every answer has its why


def test_a_reasoning_file_that_names_no_cell_or_is_missing_fails_clearly(tmp_path):
    folder = tmp_path / "hw2_stable_softmax"
    folder.mkdir()
    (folder / "hw2_stable_softmax.ipynb").write_bytes(
        (REPO / "solutions" / "hw2_stable_softmax" / "hw2_stable_softmax.ipynb").read_bytes()
    )
    with pytest.raises(solution_book.BookError, match="reasoning.md is missing"):
        solution_book.page("hw2_stable_softmax", tmp_path)
    (folder / "reasoning.md").write_text("# Title\n\ntext\n\n<!-- after: softmax_row_answer -->\nwhy\n")
    with pytest.raises(solution_book.BookError, match=r"<!-- after: softmax_row_answer --> names no cell"):
        solution_book.page("hw2_stable_softmax", tmp_path)


def test_the_committed_release_is_what_nbgrader_generates_and_never_a_reasoning_file(tmp_path):
    """nbgrader_config.py ignores *.md in the source folder: the release holds only the notebook,
    and ``exercises/`` holds exactly what ``nbgrader generate_assignment`` makes of ``solutions/``."""
    from nbgrader_tools import scratch_course

    root = scratch_course.make_course(tmp_path, ASSIGNMENTS)
    assert all((root / "solutions" / name / "reasoning.md").is_file() for name in ASSIGNMENTS)
    scratch_course.run_nbgrader_batch([["generate_assignment", name, "--force"] for name in ASSIGNMENTS], cwd=root)
    for name in ASSIGNMENTS:
        released = sorted(p.name for p in (root / "exercises" / name).rglob("*") if p.is_file())
        assert released == [f"{name}.ipynb"], (name, released)
        committed = sorted(p.name for p in (REPO / "exercises" / name).rglob("*") if p.is_file())
        assert committed == [f"{name}.ipynb"], (name, committed)
        generated = json.loads(scratch_course.release_path(root, name).read_text())
        assert json.loads((REPO / "exercises" / name / f"{name}.ipynb").read_text()) == generated, (
            f"exercises/{name} differs from what nbgrader generates from solutions/{name}; "
            f"regenerate it with: python -m nbgrader_tools release {name}"
        )


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    """The solutions book, built as ``./course solutions`` builds it (warnings and failing cells are
    errors) into a scratch folder, in its own process (away from pytest's warning filters)."""
    out = tmp_path_factory.mktemp("solutions_book")
    from nbgrader_tools.scratch_course import nbgrader_env

    done = subprocess.run(
        [sys.executable, "-m", "nbgrader_tools.solution_book", "--out", str(out)],
        cwd=REPO,
        env=nbgrader_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "the solutions book is at" in done.stdout
    return out / "html"


def test_the_solutions_book_builds_and_each_page_has_its_reasoning_and_no_hidden_test(book):
    assert (book / "index.html").is_file()
    for name in ASSIGNMENTS:
        page = (book / f"{name}.html").read_text(encoding="utf-8")
        text = text_of(page)
        opening, after = solution_book.read_reasoning(REPO / "solutions" / name / "reasoning.md")
        chunks = [
            c.source for c in opening + [c for cells in after.values() for c in cells] if c.cell_type == "markdown"
        ]
        phrases = [p for chunk in chunks for p in plain_phrases(chunk)]
        assert len(phrases) >= 5, name
        for phrase in phrases:
            assert phrase in text, (name, phrase)
        for line in solution_lines(name):  # the solution notebook's own code, as it is
            assert " ".join(line.split()) in text, (name, line)
        for line in hidden_lines(name):
            assert line not in text, (name, line)
        assert "BEGIN HIDDEN TESTS" not in page and "BEGIN SOLUTION" not in page, name
        # the grader answered every mistake on the page (one line per check that ran)
        mistakes = sum(c.source.count("grader_says(") for c in after["end"] if c.cell_type == "code")
        verdicts = re.findall(r"\b[a-z0-9_]+: \d+(?:\.\d+)? / \d+(?:\.\d+)? points\. ", text)
        assert len(verdicts) >= mistakes >= 2, (name, mistakes, len(verdicts))
        assert "passed: " in text, name  # the solution's visible tests ran and passed


def test_the_learners_book_neither_includes_nor_links_to_the_solutions(book):
    toc = (REPO / "_toc.yml").read_text()
    assert "solution" not in toc.lower()
    built_page("index.html")  # fails clearly when the learners' book was not built
    pages = sorted(HTML.rglob("*.html"))
    assert len(pages) > 10
    assert not (HTML / "solutions").exists() and not list(HTML.rglob("reasoning*"))
    solution_pages = {p.name for p in book.glob("hw*.html")}
    distinctive = []  # each reasoning page's title, and its longest run of plain words
    for name in ASSIGNMENTS:
        opening, after = solution_book.read_reasoning(REPO / "solutions" / name / "reasoning.md")
        distinctive.append(opening[0].source.splitlines()[0].lstrip("# ").strip())
        cells = opening + [c for cells in after.values() for c in cells]
        phrases = [p for c in cells if c.cell_type == "markdown" for p in plain_phrases(c.source)]
        distinctive.append(max(phrases, key=len))
    for page in pages:
        content = page.read_text(encoding="utf-8", errors="replace")
        hrefs = re.findall(r"""href=["']([^"']+)["']""", content)
        assert not [h for h in hrefs if "solutions/" in h or "_build/solutions" in h], page
        text = text_of(content)
        assert "grader_says" not in content, page
        for phrase in distinctive:
            assert phrase not in text, (page, phrase)
    assert solution_pages == {f"{name}.html" for name in ASSIGNMENTS}


def test_the_instructors_page_table_of_penalties_is_right(book):
    """Each row of the worked table on the built instructors' page (in the solutions book), recomputed
    with plain datetime arithmetic: deadline 23:59 in Berlin, 1 point (10% of 10) per started day,
    15 min grace, cap 5."""
    import datetime as dt
    import math

    from classgrader.after_deadline import late

    utc, berlin = dt.UTC, late.zone("Europe/Berlin")
    page = (book / "instructors.html").read_text(encoding="utf-8")
    table = page[page.index("final score of a 10/10") :]
    rows = re.findall(r"<tr><td><code>([^<]+)</code></td><td>([^<]*)</td><td>([^<]+)</td><td>([^<]+)</td></tr>", table)
    assert len(rows) == 6
    deadline = dt.datetime(2026, 3, 1, 23, 59, tzinfo=berlin)
    for stamp, words, penalty, final in rows:
        date, time, zone_name = html.unescape(stamp).split(" ")
        when = dt.datetime.fromisoformat(f"{date} {time}").replace(tzinfo=utc if zone_name == "UTC" else berlin)
        minutes_late = (when - deadline).total_seconds() / 60
        expected = 0 if minutes_late <= 15 else min(math.ceil(minutes_late / (24 * 60)) * 1.0, 5.0)
        assert float(penalty) == expected, (stamp, words)
        assert float(final) == 10 - expected, stamp
