"""The in-browser Jupyter's contents: the book's pages and the homework releases
as notebooks for its Pyodide kernel, and the data files they read."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import lite_markdown
from lite_paths import DATA_FILES, ROOT, LiteBuildError

# JupyterLite's kernel: the notebooks name it so that they open without asking.
KERNELSPEC = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
# Book pages other than chapters that the notebooks link to (as notebooks too).
PAGE_FOLDERS = ("chapters", "appendix")


def notebook_for_lite(nb: Any) -> None:
    """Point a notebook at JupyterLite's Pyodide kernel (in place)."""
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("jupytext", None)


def markdown_targets(site: Path) -> lite_markdown.Targets:
    """What the notebooks' MyST roles point at, read from the built site and references.bib."""
    return lite_markdown.read_targets(site, [ROOT / "references.bib"])


def lite_notebooks(targets: lite_markdown.Targets) -> dict[str, str]:
    """Every notebook of the in-browser Jupyter: path in its contents -> the notebook's JSON.

    The book's pages (chapters, appendix) come from MyST markdown by jupytext,
    their markdown cells made into plain Markdown; the homework releases are
    read as they are (their markdown gets the same conversion).
    """
    import jupytext
    import nbformat

    sources = [
        (md, md.relative_to(ROOT).with_suffix(""))
        for folder in PAGE_FOLDERS
        for md in sorted((ROOT / folder).glob("*.md"))
    ]
    sources += [
        (ipynb, ipynb.relative_to(ROOT).with_suffix("")) for ipynb in sorted((ROOT / "exercises").glob("*/*.ipynb"))
    ]
    notebooks = {}
    for path, docname in sources:
        if path.suffix == ".md":
            nb = jupytext.read(path, fmt="md:myst")
        else:
            nb = nbformat.read(path, as_version=4)
        notebook_for_lite(nb)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                try:
                    cell.source = lite_markdown.to_markdown(cell.source, targets, docname.as_posix())
                except lite_markdown.MystConversionError as err:
                    raise LiteBuildError(f"{path.relative_to(ROOT)}: {err}") from err
        notebooks[f"{docname.as_posix()}.ipynb"] = nbformat.writes(nb)
    return notebooks


def stage_contents(contents: Path, notebooks: dict[str, str]) -> list[str]:
    """The notebooks and the data files they read; returns the notebook paths."""
    for rel, text in notebooks.items():
        out = contents / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    for data in sorted([*(ROOT / "chapters").glob("*.json"), *(ROOT / "chapters").glob("*.npz")]):
        shutil.copy2(data, contents / "chapters" / data.name)
    for rel in DATA_FILES:
        (contents / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, contents / rel)
    return list(notebooks)
