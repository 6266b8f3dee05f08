"""Lines of a homework notebook that learners must never see."""

from __future__ import annotations


def hidden_test_lines(nb) -> list[str]:
    """The non-blank lines between ``BEGIN HIDDEN TESTS`` and ``END HIDDEN TESTS``
    in any cell of the notebook ``nb``, stripped."""
    lines = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and line.strip():
                lines.append(line.strip())
    return lines
