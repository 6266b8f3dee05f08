"""What a chapter's first cell costs: importing the course does not import matplotlib.

In the in-browser Jupyter importing ``matplotlib.pyplot`` takes seconds, and a
chapter's first cell imports ``sdpa_course.teaching.figures``; matplotlib is imported where
a figure is drawn. Checked in a fresh interpreter, as the kernel starts.
"""

from __future__ import annotations

import subprocess
import sys

FIRST_CELL = "import numpy\nfrom sdpa_course import lib\nfrom sdpa_course.teaching import figures, study"


def modules_after(code: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(result.stdout.split())


def test_a_first_cell_imports_no_matplotlib():
    loaded = modules_after(FIRST_CELL)
    assert "sdpa_course.teaching.figures" in loaded
    assert not {m for m in loaded if m.split(".")[0] == "matplotlib"}


def test_drawing_a_heatmap_imports_pyplot():
    loaded = modules_after(
        f"{FIRST_CELL}\nimport matplotlib\nmatplotlib.use('Agg')\nfigures.heatmap(numpy.eye(2), ['a', 'b'])"
    )
    assert "matplotlib.pyplot" in loaded
