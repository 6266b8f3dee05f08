"""Pacing and notation of chapters 1-4, read from their sources.

- At least two "Predict, then check" blocks per chapter, each a MyST
  admonition of class ``predict``, followed by the code cell that checks it and
  then a "What happened" dropdown with the explanation.
- Every "Optional:" admonition carries the class ``optional``.
- The sequence length is n, as in the notation page: no $T$ for it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("0[1-4]_*.md"))
PREDICT = re.compile(
    r":::\{admonition\} Predict, then check\n:class: predict\n(?P<question>.+?)\n:::\n\n"
    r"(?P<between>.*?)"
    r":::\{dropdown\} What happened\n",
    re.S,
)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_at_least_two_predict_then_check_blocks_each_checked_then_explained(path):
    text = path.read_text(encoding="utf-8")
    opened = text.count(":::{admonition} Predict, then check")
    blocks = list(PREDICT.finditer(text))
    assert opened >= 2, f"{path.name} has {opened} Predict, then check blocks"
    assert len(blocks) == opened, f"{path.name}: a Predict block is not followed by a What happened dropdown"
    for block in blocks:
        assert "```{code-cell}" in block["between"], f"{path.name}: no code cell checks {block['question'][:60]!r}"
        assert ":::{admonition} Predict" not in block["between"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_optional_admonitions_are_marked_optional(path):
    text = path.read_text(encoding="utf-8")
    for title in re.findall(r"\{admonition\} (Optional:[^\n]*)\n(:class:[^\n]*)", text):
        assert "optional" in title[1].split(), f"{path.name}: {title[0]!r} lacks the class optional"


@pytest.mark.parametrize("path", sorted((ROOT / "chapters").glob("0[0-4]_*.md")), ids=lambda p: p.stem)
def test_sequence_length_is_n_not_t(path):
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\$T\b|\(T, |T - 1|T-1\b|, T\)", text), f"{path.name} still writes T for the sequence length"
