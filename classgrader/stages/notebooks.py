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


def release_role(cell: dict) -> str:
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
    rcells = release.cells
    roles = [release_role(c) for c in rcells]
    by_id = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(rcells) if nbgrader_meta(c).get("grade_id")}
    owned = {i for i, r in enumerate(roles) if r in ("test", "locked")}
    by_source: dict[tuple[str, str], list[int]] = {}
    for i in owned:
        by_source.setdefault((rcells[i].cell_type, normalise_source(rcells[i].source)), []).append(i)

    release_has_meta = bool(by_id)
    learner_has_meta = any(nbgrader_meta(c).get("grade_id") in by_id for c in learner.cells)
    stripped = release_has_meta and not learner_has_meta
    repairs: dict[str, list[str]] = {}

    def note(kind: str, detail: str) -> None:
        repairs.setdefault(kind, []).append(detail)

    # Pass 1: what each learner cell is, where the metadata or the content says so.
    mapping: list[int | None] = [None] * len(learner.cells)  # learner index -> release index
    dropped: set[int] = set()
    seen: set[int] = set()
    for j, cell in enumerate(learner.cells):
        gid = nbgrader_meta(cell).get("grade_id")
        r = by_id.get(gid) if gid else None
        if r is not None and rcells[r].cell_type != cell.cell_type:
            r = None
        if r is None and cell.cell_type in ("code", "markdown") and normalise_source(cell.source):
            hits = [i for i in by_source.get((cell.cell_type, normalise_source(cell.source)), []) if i not in seen]
            dup = by_source.get((cell.cell_type, normalise_source(cell.source)), [])
            if hits:
                r = hits[0]
            elif dup:
                r = dup[0]
        if r is None:
            continue
        if r in owned:
            if r in seen:
                dropped.add(j)
                if roles[r] == "test":
                    note("duplicated", f"test cell {_label(rcells[r])} appears more than once")
                continue
            seen.add(r)
            mapping[j] = r
            if roles[r] == "test" and normalise_source(cell.source) != normalise_source(rcells[r].source):
                note("edited", f"test cell {_label(rcells[r])} was edited; the release's version is used")
        elif roles[r] == "answer":
            if r in seen:
                continue  # a second copy of an answer cell stays as the learner's own code
            seen.add(r)
            mapping[j] = r

    # Pass 2: answers (and edited test cells) of notebooks without metadata.
    answers = [i for i, r in enumerate(roles) if r == "answer" and i not in seen]
    free = [j for j, c in enumerate(learner.cells) if mapping[j] is None and j not in dropped]
    for r in answers:
        lo, hi = _neighbours(r, mapping)
        window = [j for j in free if lo < j < hi and learner.cells[j].cell_type == rcells[r].cell_type]
        if not window:
            continue
        want = _defined_names(rcells[r].source) if rcells[r].cell_type == "code" else set()
        best = max(
            window,
            key=lambda j: (
                len(want & _defined_names(learner.cells[j].source)) if want else 0,
                _similar(learner.cells[j].source, rcells[r].source),
            ),
        )
        if want and not (want & _defined_names(learner.cells[best].source)) and len(window) > 1:
            continue
        mapping[best] = r
        seen.add(r)
        free.remove(best)
    for r in [i for i, role in enumerate(roles) if role == "test" and i not in seen]:
        for j in list(free):
            cell = learner.cells[j]
            if cell.cell_type == "code" and _similar(cell.source, rcells[r].source) >= 0.8:
                dropped.add(j)
                free.remove(j)
                seen.add(r)
                note("edited", f"test cell {_label(rcells[r])} was edited; the release's version is used")
                break
    for r in [i for i, role in enumerate(roles) if role == "test" and i not in seen]:
        note("deleted", f"test cell {_label(rcells[r])} was missing; the release's version is used")

    # Assemble: release order, learner extras after the cell they followed.
    after: dict[int, list[int]] = {}
    anchor = -1
    for j in range(len(learner.cells)):
        if (r := mapping[j]) is not None:
            anchor = r
        elif j not in dropped:
            after.setdefault(anchor, []).append(j)
    answer_of = {r: j for j, r in enumerate(mapping) if r is not None and roles[r] == "answer"}

    plan: list[PlanCell] = []

    def extras(anchor_index: int) -> None:
        for j in after.get(anchor_index, []):
            cell = learner.cells[j]
            plan.append(
                PlanCell(
                    role="extra" if cell.cell_type == "code" else "markdown",
                    source=cell.source,
                    cell_type=cell.cell_type,
                    learner_index=j,
                )
            )

    extras(-1)
    for i, rc in enumerate(rcells):
        gid = nbgrader_meta(rc).get("grade_id")
        if roles[i] == "answer":
            answer = answer_of.get(i)
            if answer is None:
                plan.append(PlanCell("missing_answer", rc.source, rc.cell_type, gid, i, None))
            else:
                role = "answer" if rc.cell_type == "code" else "markdown"
                plan.append(PlanCell(role, learner.cells[answer].source, rc.cell_type, gid, i, answer))
        elif roles[i] == "test":
            plan.append(PlanCell("test", rc.source, rc.cell_type, gid, i, None))
        else:
            role = "setup" if rc.cell_type == "code" else "markdown"
            plan.append(PlanCell(role, rc.source, rc.cell_type, gid, i, None))
        extras(i)
    return Plan(plan, repairs, stripped)


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


def _label(cell: dict) -> str:
    gid = nbgrader_meta(cell).get("grade_id")
    return repr(gid) if gid else "(no id)"


def autograded_notebook(
    plan: Plan, release: nbformat.NotebookNode, outputs: dict[int, list[dict]]
) -> nbformat.NotebookNode:
    """The notebook as graded: release cells (with their nbgrader metadata) and the
    learner's answers and extra cells, with the bounded text outputs of the run.

    It has the release's structure, so nbgrader's own feedback and export can
    read it next to the gradebook. It never contains hidden tests: test cells
    are the release's (student) version.
    """
    nb = nbformat.v4.new_notebook()
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


def stream_output(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def error_output(ename: str, evalue: str) -> dict:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]}
