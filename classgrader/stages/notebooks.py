"""Read a submitted notebook and line its cells up with the release.

Learners' notebooks arrive in every state: renamed, saved by VS Code or Colab
without nbgrader's cell metadata, with test cells edited, copied or deleted,
cut short, or not notebooks at all. :func:`load` turns bytes into a notebook
or a clear reason why not; :func:`match` lines the learner's cells up with the
release notebook (the student version in ``exercises/``) and returns a
:class:`Plan`: the cells to run, in order, where

* every locked cell and every test cell is the **release's** copy, whatever
  the learner did to theirs (edited, duplicated, deleted);
* every answer cell holds the learner's answer, found by its nbgrader
  ``grade_id`` or, when the metadata was stripped, by position between the
  release's cells and by the names it defines;
* cells the learner added are kept, after the cell they followed.

What was repaired is recorded in ``Plan.repairs`` so the report can say so.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import json
import re
from typing import Any

import nbformat

from nbgrader_tools.cells import nbgrader_meta

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024


class NotANotebook(ValueError):
    """The file is not a readable Jupyter notebook; the message says why."""


def load(data: bytes, name: str = "notebook") -> nbformat.NotebookNode:
    """Parse a submitted file into an nbformat-4 notebook, or raise :class:`NotANotebook`."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotANotebook(f"{name} is {len(data)} bytes; notebooks over {MAX_NOTEBOOK_BYTES} bytes are not graded")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotANotebook(f"{name} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotANotebook(
            f"{name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); the file may be cut short"
        ) from None
    except RecursionError:
        raise NotANotebook(f"{name} is nested too deeply to be a notebook") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells", raw.get("worksheets")), list):
        raise NotANotebook(f"{name} is JSON but not a Jupyter notebook (no list of cells)")
    nb: nbformat.NotebookNode
    try:
        # No nbformat validation here: it warns about every quirk of a learner's
        # file (missing or duplicate cell ids...) and the matching below copes.
        if raw.get("nbformat") != 4:
            nb = nbformat.convert(nbformat.from_dict(raw), 4)
        else:
            nb = nbformat.from_dict(raw)
    except Exception as exc:  # nbformat raises several types for malformed notebooks
        raise NotANotebook(f"{name} is not a notebook nbformat can read: {str(exc)[:200]}") from None
    if not isinstance(nb.get("cells"), list):
        raise NotANotebook(f"{name} is JSON but not a Jupyter notebook (no list of cells)")
    cells = []
    for cell in nb.cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        src = cell.get("source", "")
        if isinstance(src, list):
            src = "".join(str(s) for s in src)
        cell["source"] = src if isinstance(src, str) else str(src)
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = nbformat.NotebookNode()
        cells.append(cell)
    nb.cells = cells
    return nb


def release_role(cell: dict[str, Any]) -> str:
    """answer, test, locked or plain, from a release cell's nbgrader metadata."""
    meta = nbgrader_meta(cell)
    if meta.get("solution"):
        return "answer"
    if meta.get("grade"):
        return "test"
    if meta.get("locked") or meta.get("task"):
        return "locked"
    return "plain"


def normalise_source(source: str) -> str:
    """Source text compared line by line, ignoring trailing spaces and blank ends."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _defined_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set(re.findall(r"^\s*def\s+(\w+)", source, flags=re.M))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _similar(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, normalise_source(a), normalise_source(b), autojunk=False).ratio()


@dataclasses.dataclass
class PlanCell:
    """One cell of the notebook as it will be run and shown.

    ``role``: setup (a locked or plain release code cell), answer (the
    learner's answer to a release answer cell), missing_answer (no answer was
    found: not run), extra (a cell the learner added), test (the release's
    test cell), markdown.
    """

    role: str
    source: str
    cell_type: str = "code"
    grade_id: str | None = None
    release_index: int | None = None
    learner_index: int | None = None

    @property
    def runs(self) -> bool:
        return self.cell_type == "code" and self.role in ("setup", "answer", "extra", "test")


@dataclasses.dataclass
class Plan:
    cells: list[PlanCell]
    repairs: dict[str, list[str]]  # kind -> details
    metadata_stripped: bool


def match(learner: nbformat.NotebookNode, release: nbformat.NotebookNode) -> Plan:
    """Line the learner's cells up with the release's (see the module docstring)."""
    rel = _Release.of(release)
    learner_has_meta = any(nbgrader_meta(c).get("grade_id") in rel.by_id for c in learner.cells)
    stripped = bool(rel.by_id) and not learner_has_meta
    found = _Matching(mapping=[None] * len(learner.cells))
    # Pass 1: what each learner cell is, where the metadata or the content says so.
    _match_known(learner.cells, rel, found)
    # Pass 2: answers (and edited test cells) of notebooks without metadata.
    free = [j for j in range(len(learner.cells)) if found.mapping[j] is None and j not in found.dropped]
    _place_answers(learner.cells, rel, found, free)
    _find_edited_tests(learner.cells, rel, found, free)
    for r in [i for i, role in enumerate(rel.roles) if role == "test" and i not in found.seen]:
        found.note("deleted", f"test cell {_label(rel.cells[r])} was missing; the release's version is used")
    return Plan(_assemble(learner.cells, rel, found), found.repairs, stripped)


@dataclasses.dataclass
class _Release:
    """The release's cells, indexed for lining a learner's cells up with them."""

    cells: list[Any]
    roles: list[str]  # release_role of each cell
    by_id: dict[Any, int]  # grade_id -> index (as the metadata gives it)
    owned: set[int]  # test and locked cells: always run as the release's copy
    by_source: dict[tuple[str, str], list[int]]  # (cell type, normalised source) -> owned cells with it

    @classmethod
    def of(cls, release: nbformat.NotebookNode) -> _Release:
        cells = release.cells
        roles = [release_role(c) for c in cells]
        by_id = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(cells) if nbgrader_meta(c).get("grade_id")}
        owned = {i for i, r in enumerate(roles) if r in ("test", "locked")}
        by_source: dict[tuple[str, str], list[int]] = {}
        for i in owned:
            by_source.setdefault((cells[i].cell_type, normalise_source(cells[i].source)), []).append(i)
        return cls(cells, roles, by_id, owned, by_source)


@dataclasses.dataclass
class _Matching:
    """What is known so far: which release cell each learner cell is, and what was repaired."""

    mapping: list[int | None]  # learner index -> release index
    dropped: set[int] = dataclasses.field(default_factory=set)  # learner cells replaced by the release's copy
    seen: set[int] = dataclasses.field(default_factory=set)  # release cells already found
    repairs: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def note(self, kind: str, detail: str) -> None:
        self.repairs.setdefault(kind, []).append(detail)


def _release_cell_of(cell: nbformat.NotebookNode, rel: _Release, seen: set[int]) -> int | None:
    """The release cell ``cell`` is: by its grade_id (whatever its cell type: nbgrader's OverwriteCells gives
    the cell its recorded type back), else a test or locked cell by its source."""
    gid = nbgrader_meta(cell).get("grade_id")
    r = rel.by_id.get(gid) if gid else None
    if r is None and cell.cell_type in ("code", "markdown") and normalise_source(cell.source):
        same = rel.by_source.get((cell.cell_type, normalise_source(cell.source)), [])
        hits = [i for i in same if i not in seen]
        if hits:
            r = hits[0]
        elif same:
            r = same[0]
    return r


def _match_known(cells: list[Any], rel: _Release, found: _Matching) -> None:
    """Map each learner cell that names or copies a release cell; drop second copies of test and locked cells."""
    for j, cell in enumerate(cells):
        r = _release_cell_of(cell, rel, found.seen)
        if r is None:
            continue
        if cell.cell_type != rel.cells[r].cell_type and r not in found.seen:
            found.note(
                "retyped",
                f"cell {_label(rel.cells[r])} was made a {cell.cell_type} cell; it is run as the release's "
                f"{rel.cells[r].cell_type} cell",
            )
        if r in rel.owned:
            if r in found.seen:
                found.dropped.add(j)
                if rel.roles[r] == "test":
                    found.note("duplicated", f"test cell {_label(rel.cells[r])} appears more than once")
                continue
            found.seen.add(r)
            found.mapping[j] = r
            if rel.roles[r] == "test" and normalise_source(cell.source) != normalise_source(rel.cells[r].source):
                found.note("edited", f"test cell {_label(rel.cells[r])} was edited; the release's version is used")
        elif rel.roles[r] == "answer":
            if r in found.seen:
                continue  # a second copy of an answer cell stays as the learner's own code
            found.seen.add(r)
            found.mapping[j] = r


def _place_answers(cells: list[Any], rel: _Release, found: _Matching, free: list[int]) -> None:
    """Each answer not found yet: the unmatched learner cell between its neighbours that defines its names
    (or looks most like it), taken out of ``free``."""
    answers = [i for i, r in enumerate(rel.roles) if r == "answer" and i not in found.seen]
    for r in answers:
        lo, hi = _neighbours(r, found.mapping)
        window = [j for j in free if lo < j < hi and cells[j].cell_type == rel.cells[r].cell_type]
        if not window:
            continue
        want = _defined_names(rel.cells[r].source) if rel.cells[r].cell_type == "code" else set()
        best = max(
            window,
            key=lambda j: (
                len(want & _defined_names(cells[j].source)) if want else 0,
                _similar(cells[j].source, rel.cells[r].source),
            ),
        )
        if want and not (want & _defined_names(cells[best].source)) and len(window) > 1:
            continue
        found.mapping[best] = r
        found.seen.add(r)
        free.remove(best)


def _find_edited_tests(cells: list[Any], rel: _Release, found: _Matching, free: list[int]) -> None:
    """Each test cell not found yet: an unmatched learner code cell much like it is its edited copy (dropped)."""
    for r in [i for i, role in enumerate(rel.roles) if role == "test" and i not in found.seen]:
        for j in list(free):
            cell = cells[j]
            if cell.cell_type == "code" and _similar(cell.source, rel.cells[r].source) >= 0.8:
                found.dropped.add(j)
                free.remove(j)
                found.seen.add(r)
                found.note("edited", f"test cell {_label(rel.cells[r])} was edited; the release's version is used")
                break


def _assemble(cells: list[Any], rel: _Release, found: _Matching) -> list[PlanCell]:
    """The cells to run: release order, learner extras after the cell they followed."""
    after: dict[int, list[int]] = {}
    anchor = -1
    for j in range(len(cells)):
        if (r := found.mapping[j]) is not None:
            anchor = r
        elif j not in found.dropped:
            after.setdefault(anchor, []).append(j)
    answer_of = {r: j for j, r in enumerate(found.mapping) if r is not None and rel.roles[r] == "answer"}

    def extras(anchor_index: int) -> list[PlanCell]:
        return [
            PlanCell(
                role="extra" if cells[j].cell_type == "code" else "markdown",
                source=cells[j].source,
                cell_type=cells[j].cell_type,
                learner_index=j,
            )
            for j in after.get(anchor_index, [])
        ]

    plan = extras(-1)
    for i, rc in enumerate(rel.cells):
        gid = nbgrader_meta(rc).get("grade_id")
        if rel.roles[i] == "answer":
            answer = answer_of.get(i)
            if answer is None:
                plan.append(PlanCell("missing_answer", rc.source, rc.cell_type, gid, i, None))
            else:
                role = "answer" if rc.cell_type == "code" else "markdown"
                plan.append(PlanCell(role, cells[answer].source, rc.cell_type, gid, i, answer))
        elif rel.roles[i] == "test":
            plan.append(PlanCell("test", rc.source, rc.cell_type, gid, i, None))
        else:
            role = "setup" if rc.cell_type == "code" else "markdown"
            plan.append(PlanCell(role, rc.source, rc.cell_type, gid, i, None))
        plan += extras(i)
    return plan


def _neighbours(r: int, mapping: list[int | None]) -> tuple[int, int]:
    """Learner positions of the closest matched cells before and after release cell r."""
    lo, hi = -1, len(mapping)
    for j, m in enumerate(mapping):
        if m is None:
            continue
        if m < r:
            lo = max(lo, j)
        elif m > r:
            hi = min(hi, j)
    return lo, hi


def _label(cell: dict[str, Any]) -> str:
    gid = nbgrader_meta(cell).get("grade_id")
    return repr(gid) if gid else "(no id)"


def autograded_notebook(
    plan: Plan, release: nbformat.NotebookNode, outputs: dict[int, list[dict[str, Any]]]
) -> nbformat.NotebookNode:
    """The notebook as graded: release cells (with their nbgrader metadata) and the
    learner's answers and extra cells, with the bounded text outputs of the run.

    It has the release's structure, so nbgrader's own feedback and export can
    read it next to the gradebook. It never contains hidden tests: test cells
    are the release's (student) version.
    """
    nb: nbformat.NotebookNode = nbformat.v4.new_notebook()
    nb.metadata = copy.deepcopy(release.metadata)
    for i, pc in enumerate(plan.cells):
        if pc.release_index is not None:
            cell = copy.deepcopy(release.cells[pc.release_index])
            cell.source = pc.source
            if pc.role == "answer":
                cell.pop("attachments", None)
        elif pc.cell_type == "markdown":
            cell = nbformat.v4.new_markdown_cell(pc.source)
        else:
            cell = nbformat.v4.new_code_cell(pc.source)
        if cell.cell_type == "code":
            cell.outputs = [nbformat.from_dict(o) for o in outputs.get(i, [])]
            cell.execution_count = None
        cell["id"] = f"graded-{i:04d}"
        nb.cells.append(cell)
    return nb


def stream_output(name: str, text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


def error_output(ename: str, evalue: str) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]}
