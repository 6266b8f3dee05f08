"""Folded code cells ("Show code cell source") in the built chapters.

myst-nb folds a cell tagged ``hide-input``: its code behind a toggle, its
output shown. A folded cell that shows nothing is a toggle over nothing, and
two in a row look like one doubled. Such a cell is allowed only where the
reader knows what it is: as the page's first code cell (the set-up that the
prose before it introduces) or when it glues the numbers that the text after
it quotes. Any other code that shows nothing belongs in the cell that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

import pytest
from built_book import HTML, built_page

PAGES = sorted(p.relative_to(HTML).as_posix() for p in (HTML / "chapters").glob("[0-9][0-9]_*.html"))


@dataclass
class Cell:
    folded: bool
    code: str = ""
    output: bool = False


class _Cells(HTMLParser):
    """The page's code cells, in order, and what stands between them (None: only whitespace)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[Cell] = []
        self.between: list[bool] = []  # before each cell: did anything else come since the last one?
        self._depth = 0  # open divs inside the current cell (0: outside every cell)
        self._input_depth = 0
        self._since = False

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self._depth:
            if tag == "div":
                self._depth += 1
                if "cell_output" in classes:
                    self.cells[-1].output = True
                if "cell_input" in classes:
                    self._input_depth = self._depth
        elif tag == "div" and "cell" in classes:
            self.cells.append(Cell(folded="tag_hide-input" in classes))
            self.between.append(self._since)
            self._depth, self._since = 1, False
        elif tag in ("p", "h1", "h2", "h3", "h4", "ul", "ol", "table", "figure", "details", "div"):
            self._since = True

    def handle_endtag(self, tag):
        if self._depth and tag == "div":
            if self._depth == self._input_depth:
                self._input_depth = 0
            self._depth -= 1

    def handle_data(self, data):
        if self._input_depth:
            self.cells[-1].code += data


@pytest.mark.parametrize("path", PAGES)
def test_a_folded_cell_that_shows_nothing_says_why(path):
    parser = _Cells()
    parser.feed(built_page(path))
    cells = parser.cells
    assert cells, f"{path}: no code cells found (has myst-nb's markup changed?)"
    problems = []
    for n, cell in enumerate(cells):
        if not cell.folded or cell.output:
            continue
        if n == 0 or "glue(" in cell.code:
            continue
        first_line = cell.code.strip().splitlines()[0] if cell.code.strip() else ""
        problems.append(f"code cell {n + 1} is folded and shows nothing: {first_line!r}")
    for n in range(1, len(cells)):
        before, cell = cells[n - 1], cells[n]
        if before.folded and not before.output and cell.folded and not parser.between[n]:
            problems.append(f"code cells {n} and {n + 1}: two folded cells in a row, the first showing nothing")
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)
