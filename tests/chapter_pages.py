"""Reading a built chapter the way the audit tests need: its cell outputs, its
notes, and the numbers printed in them.

The audit tests (``tests/test_chapter_*_numbers.py``) recompute every number
a chapter prints or glues into its prose from an independent computation and
compare it with the page's outputs (or the glued values) through these helpers.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from built_book import built_page

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
NUMBER = re.compile(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?|[-+]?\d+(?:e[-+]?\d+)?")


class _Regions(HTMLParser):
    """Splits a page's text into cell outputs (one string per cell), cell
    inputs, notes (admonitions and dropdowns that are not hidden code) and the
    rest, and collects every image's alt text."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, set[str]]] = []
        self.outputs: list[str] = []
        self.text: dict[str, list[str]] = {"input": [], "admonition": [], "other": []}
        self.alts: list[str] = []
        self._output_depth: int | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "img" and attributes.get("alt"):
            self.alts.append(attributes["alt"])
        if tag in VOID:
            return
        classes = set((attributes.get("class") or "").split())
        if "cell_output" in classes and self._output_depth is None:
            self._output_depth = len(self.stack)
            self.outputs.append("")
        self.stack.append((tag, classes))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                if self._output_depth is not None and len(self.stack) <= self._output_depth:
                    self._output_depth = None
                return

    def handle_data(self, data):
        if self._output_depth is not None:
            self.outputs[-1] += data
        elif any("cell_input" in c for _, c in self.stack):
            self.text["input"].append(data)
        elif any(("admonition" in c or "sd-dropdown" in c) and "hide" not in c for _, c in self.stack):
            self.text["admonition"].append(data)
        else:
            self.text["other"].append(data)


def _join_pieces(text: str) -> str:
    """Rejoin a line that a cell printed in several stream pieces (each piece is
    its own block on the page, separated by blank lines in the parsed text)."""
    return re.sub(r"(?<=[^\n])\n\n\n(?=[^\n])", "", text)


class Page:
    """One built chapter: ``outputs`` (list, page order), ``notes``, ``inputs``, ``prose``, ``alts``."""

    def __init__(self, relative: str) -> None:
        parser = _Regions()
        parser.feed(built_page(relative))
        # Quizzes and flashcards are outputs too, but hold data files, not computed numbers.
        self.outputs = [
            _join_pieces(o) for o in parser.outputs if "createCards" not in o and "jq-multiple-choice-bg" not in o
        ]
        self.inputs = "".join(parser.text["input"])
        self.notes = " ".join("".join(parser.text["admonition"]).split())
        self.prose = " ".join("".join(parser.text["other"]).split())
        self.alts = parser.alts

    def output_with(self, marker: str) -> str:
        """The one cell output that contains ``marker``."""
        found = [o for o in self.outputs if marker in o]
        assert len(found) == 1, f"expected one cell output containing {marker!r}, found {len(found)}"
        return found[0]

    def line_with(self, marker: str) -> str:
        """The one line of any cell output that contains ``marker``."""
        found = [line for o in self.outputs for line in o.splitlines() if marker in line]
        assert len(found) == 1, f"expected one output line containing {marker!r}, found {found}"
        return found[0]


def numbers(text: str) -> list[float]:
    """Every number in ``text``, in order (integers, decimals, 1.5e-05)."""
    return [float(x) for x in NUMBER.findall(text)]


def assert_printed(printed: list[float], expected, decimals: int) -> None:
    """Each printed number is the expected value rounded to ``decimals`` places."""
    expected = [float(e) for e in expected]
    assert len(printed) == len(expected), f"printed {printed}, expected {len(expected)} numbers {expected}"
    tolerance = 0.5 * 10.0**-decimals + 1e-9
    for p, e in zip(printed, expected):
        assert abs(p - e) <= tolerance, f"printed {p}, but the independent value is {e}"


def printed_flag(text: str, label: str) -> bool:
    """The True or False printed after ``label`` on the one output line of ``text`` that starts with it
    (a chapter's ``print(f"...: {flag}")``)."""
    found = [line.strip() for line in text.splitlines() if line.strip().startswith(label)]
    assert len(found) == 1, f"expected one output line starting with {label!r}, found {found}"
    flag = re.search(r"\b(True|False)\s*$", found[0])
    assert flag, f"{found[0]!r} ends with no True or False"
    return flag[1] == "True"
