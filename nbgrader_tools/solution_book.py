"""The solutions book: the instructor's solutions with their reasoning, for after the deadline.

``./course solutions`` (``python -m nbgrader_tools.solution_book``) builds a
small, separate Jupyter Book into ``_build/solutions/html/``. It is never part
of the learners' book (``_toc.yml`` does not list it and ``_config.yml``
excludes ``solutions/``); an instructor publishes it when they choose, e.g.
after the deadline of the last homework it covers.

It opens with the instructors' guide (:data:`GUIDE`, pages in ``solution_book/``:
the term step by step, the class grader, grading on a cluster, the grading of
each assignment in detail, hidden tests included), then has one page per
assignment, put together from two files:

- ``solutions/<assignment>/<assignment>.ipynb``, nbgrader's instructor
  source: its cells are shown as they are (one home for the solution code),
  the ``### BEGIN/END SOLUTION`` marker lines removed and the hidden tests
  cleared by nbgrader's own ``ClearHiddenTests``;
- ``solutions/<assignment>/reasoning.md``, a MyST notebook with the reasoning:
  its text up to the first marker opens the page, and the part after a line
  ``<!-- after: GRADE_ID -->`` follows the notebook cell with that
  ``grade_id``, so the why of each step stands next to the step. The part
  after ``<!-- after: end -->`` closes the page: the common mistakes, each as
  a code cell that calls :func:`grader_says`, so that what the page says the
  grader answers is what the grader answers when the book is built.

nbgrader copies nothing but notebooks into the release: ``nbgrader_config.py``
ignores ``*.md`` in the source folder (a test generates the release and
checks). The pages execute when the book is built, with ``-W``: a solution
that fails its own visible tests, or a mistake cell that raises, fails the
build.
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
from pathlib import Path

import nbformat

from nbgrader_tools.cells import nbgrader_meta

REPO = Path(__file__).resolve().parent.parent
BOOK = REPO / "solution_book"  # the book's own config and front page
MARKER = re.compile(r"^\s*<!--\s*after:\s*([A-Za-z0-9_.-]+)\s*-->\s*$", re.M)
SOLUTION_LINE = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z]+:|#)[^)]*\)")
SEED = 2026  # the hidden checks' inputs on the pages: fixed, so that a rebuild shows the same
#: The instructors' guide (``solution_book/<page>.md``), in the book's order. The pages on a
#: plain nbgrader assignment of one's own (guide_own_assignment) and on JupyterHub (guide_hub)
#: go after guide_term when they are merged.
GUIDE = ("guide_term", "guide_grader", "guide_own_assignment", "guide_cluster", "guide_hub", "instructors")


class BookError(RuntimeError):
    """The solutions book cannot be put together; the message names the file."""


def grader_says(assignment: str, seed: int = SEED, **functions) -> None:
    """Print what every check of ``assignment`` that uses only ``functions`` gives them.

    One line per check: the points earned, the points, and the check's own
    message to the learner. ``functions`` maps the learner function names
    (e.g. ``softmax_rows=...``) to implementations; hidden checks use ``seed``.
    """
    from sdpa_course import grading

    shown = 0
    for check in grading.checks_for(assignment):
        if not set(check.functions) <= set(functions):
            continue
        verdict = check.grade({name: functions[name] for name in check.functions}, seed)
        earned = check.points * min(max(float(verdict.fraction), 0.0), 1.0)
        print(f"{check.id}: {earned:g} / {check.points:g} points. {verdict.message}")
        shown += 1
    if not shown:
        raise KeyError(f"no check of {assignment} uses only {sorted(functions)}")


def read_reasoning(path: Path) -> tuple[list, dict[str, list]]:
    """(cells that open the page, ``{grade_id or "end": cells}``) from a reasoning file."""
    import jupytext

    if not path.is_file():
        raise BookError(
            f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path} is missing: "
            "every assignment needs its reasoning page"
        )
    nb = jupytext.read(path, fmt="md:myst")
    opening: list = []
    after: dict[str, list] = {}
    current = opening
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            current.append(cell)
            continue
        pieces = MARKER.split(cell.source)
        # pieces: [text, id, text, id, text, ...]
        if pieces[0].strip():
            current.append(nbformat.v4.new_markdown_cell(pieces[0].strip()))
        for key, text in zip(pieces[1::2], pieces[2::2]):
            if key in after:
                raise BookError(f"{path.name}: the marker <!-- after: {key} --> appears twice")
            current = after[key] = []
            if text.strip():
                current.append(nbformat.v4.new_markdown_cell(text.strip()))
    return opening, after


def solution_cells(source: nbformat.NotebookNode) -> list:
    """The instructor notebook's cells as shown: no solution markers, no hidden tests, no links out."""
    from nbgrader.preprocessors import ClearHiddenTests

    nb = copy.deepcopy(source)
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    cells = []
    for cell in nb.cells:
        new = copy.deepcopy(cell)
        if new.cell_type == "code":
            new.source = "\n".join(line for line in new.source.splitlines() if not SOLUTION_LINE.match(line))
            new.outputs, new.execution_count = [], None
        elif new.cell_type == "markdown":
            # links into the learners' book do not exist in this one: keep their text
            new.source = RELATIVE_LINK.sub(r"\1", new.source)
        new.metadata = {"grade_id": nbgrader_meta(cell).get("grade_id")} if nbgrader_meta(cell).get("grade_id") else {}
        cells.append(new)
    return cells


def page(assignment: str, solutions: Path = REPO / "solutions") -> nbformat.NotebookNode:
    """The page of one assignment as a notebook (executed when the book is built)."""
    folder = solutions / assignment
    source = nbformat.read(folder / f"{assignment}.ipynb", as_version=4)
    opening, after = read_reasoning(folder / "reasoning.md")
    ids = {gid for c in source.cells if (gid := nbgrader_meta(c).get("grade_id")) is not None}
    unknown = sorted(set(after) - ids - {"end"})
    if unknown:
        raise BookError(
            f"{assignment}/reasoning.md: <!-- after: {unknown[0]} --> names no cell of the notebook; "
            f"its grade_ids are {sorted(ids)}"
        )
    if not opening or not opening[0].source.lstrip().startswith("# "):
        raise BookError(f"{assignment}/reasoning.md must open with a '# ' title")
    cells = list(opening)
    for cell in solution_cells(source):
        gid = cell.metadata.pop("grade_id", None)
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
            cell.source = "#" + cell.source.lstrip()  # the statement's title becomes a section
        cells.append(cell)
        cells.extend(after.get(gid, []))
    cells.extend(after.get("end", []))
    nb = nbformat.v4.new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i:03d}"
    return nb


def assignments(solutions: Path = REPO / "solutions") -> list[str]:
    return sorted(p.name for p in solutions.iterdir() if (p / f"{p.name}.ipynb").is_file())


def stage(out: Path, names: list[str] | None = None) -> Path:
    """Write the book's sources into ``out/src`` (replaced); return that folder."""
    import yaml

    src = out / "src"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    names = names or assignments()
    for name in names:
        nbformat.write(page(name), src / f"{name}.ipynb")
    shutil.copy(BOOK / "intro.md", src / "intro.md")
    for guide_page in GUIDE:
        shutil.copy(BOOK / f"{guide_page}.md", src / f"{guide_page}.md")
    config = yaml.safe_load((BOOK / "_config.yml").read_text())
    config.setdefault("sphinx", {}).setdefault("local_extensions", {})["offline_site"] = str(REPO / "_ext")
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    toc = {
        "format": "jb-book",
        "root": "intro",
        "parts": [
            {"caption": "Instructors' guide", "chapters": [{"file": name} for name in GUIDE]},
            {"caption": "Solutions", "chapters": [{"file": name} for name in names]},
        ],
    }
    (src / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    return src


def build(out: Path = REPO / "_build" / "solutions", names: list[str] | None = None, *, quiet: bool = False) -> Path:
    """Stage and build the book with warnings as errors; return the folder with ``index.html``."""
    from jupyter_book.sphinx import build_sphinx

    src = stage(out, names)
    html = out / "html"
    result = build_sphinx(
        src,
        html,
        use_external_toc=True,
        noconfig=True,
        path_config=str(src / "_config.yml"),
        confoverrides={
            "external_toc_path": (src / "_toc.yml").as_posix(),
            "nitpicky": True,
            "latex_individualpages": False,
        },
        builder="html",
        warningiserror=True,
        keep_going=True,
        freshenv=True,
        quiet=quiet,
        really_quiet=quiet,
    )
    if result != 0:
        raise BookError(f"the solutions book did not build cleanly (sphinx returned {result}); see the warnings above")
    return html


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="course solutions",
        description="Build the solutions book (solutions with their reasoning, common mistakes and what the "
        "grader says) into _build/solutions/html/. It is not part of the learners' book: "
        "publish it yourself, after the deadline.",
    )
    p.add_argument("assignments", nargs="*", help="only these assignments (default: every one in solutions/)")
    p.add_argument("--out", type=Path, default=REPO / "_build" / "solutions", help="default: _build/solutions")
    args = p.parse_args(argv)
    try:
        html = build(args.out, args.assignments or None)
    except BookError as exc:
        print(f"course solutions: {exc}", file=sys.stderr)
        return 1
    print(f"\ncourse: the solutions book is at {html / 'index.html'} (not linked from the learners' book)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
