"""The in-browser Jupyter's contents: the book's pages and the homework releases
as notebooks for its Pyodide kernel, and the data files they read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import markdown
from .places import DATA_FILES, ROOT, LiteBuildError

# JupyterLite's kernel: the notebooks name it so that they open without asking.
KERNELSPEC = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
# Book pages other than chapters that the notebooks link to (as notebooks too).
PAGE_FOLDERS = ("chapters", "appendix")


def notebook_for_lite(nb: Any) -> None:
    """Point a notebook at JupyterLite's Pyodide kernel (in place)."""
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("jupytext", None)


def markdown_targets(site: Path) -> markdown.Targets:
    """What the notebooks' MyST roles point at, read from the built site, its
    executed notebooks' glue and references.bib."""
    return markdown.read_targets(site, [ROOT / "references.bib"])


def sources(root: Path = ROOT) -> list[tuple[Path, str]]:
    """(file, page name) of every page and homework release the in-browser Jupyter holds."""
    found = [
        (md, md.relative_to(root).with_suffix("").as_posix())
        for folder in PAGE_FOLDERS
        for md in sorted((root / folder).glob("*.md"))
    ]
    found += [
        (ipynb, ipynb.relative_to(root).with_suffix("").as_posix())
        for ipynb in sorted((root / "exercises").glob("*/*.ipynb"))
    ]
    return found


def lite_notebooks(targets: markdown.Targets, root: Path = ROOT) -> dict[str, str]:
    """Every notebook of the in-browser Jupyter: its path there -> the notebook's JSON.

    The book's pages (chapters, appendix) come from MyST markdown by jupytext,
    their markdown cells made into plain Markdown; the homework releases are
    read as they are (their markdown gets the same conversion). A role the
    book cannot resolve (a page, label or glued value it does not have) stops
    the build with the file's name.
    """
    import jupytext
    import nbformat

    notebooks = {}
    for path, docname in sources(root):
        if path.suffix == ".md":
            nb = jupytext.read(path, fmt="md:myst")
            for i, cell in enumerate(nb.cells):
                # jupytext draws random ids: the same page must give the same bytes,
                # or JupyterLite's build would copy it again every time.
                cell.id = f"cell-{i}"
        else:
            nb = nbformat.read(path, as_version=4)
        notebook_for_lite(nb)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                try:
                    cell.source = markdown.to_markdown(cell.source, targets, docname)
                except markdown.MystConversionError as err:
                    raise LiteBuildError(f"{path.relative_to(root)}: {err}") from err
        notebooks[markdown.notebook_path(docname)] = nbformat.writes(nb)
    return notebooks


def contents_files(targets: markdown.Targets) -> dict[str, bytes]:
    """Every file of the in-browser Jupyter's drive (path there -> bytes): the
    notebooks and the data files they read, with the same layout as the course."""
    files = {rel: text.encode("utf-8") for rel, text in lite_notebooks(targets).items()}
    chapters = ROOT / "chapters"
    for data in sorted([*chapters.glob("*.json"), *chapters.glob("*.npz")]):
        files[f"chapters/{data.name}"] = data.read_bytes()
    for rel in DATA_FILES:
        files[rel] = (ROOT / rel).read_bytes()
    return files
