"""What a learner reads writes vectors as rows and counts from 0, as the
welcome page and the notation appendix promise.

With row vectors the dot product of x_i and x_j is x_i x_j^T; the column-vector
form x_i^T x_j (which the paper uses) would be a d x d matrix. The softmax's
Jacobian is diag(a) - a^T a for the row a, and a list of scores starts at z_0.
The scan covers the chapters and their quiz and flashcard text, the appendix,
the homework (statements, generated exercises and solution notes) and the
strings of lib, teaching and grading. A page may quote the paper's
column-vector form on purpose; each such quote is allowed by file and exact
phrase in ``ALLOWED``, and every allowed phrase must still be on its page.
"""

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A transpose sign: ^\top, ^{\top}, ^T, ^{T}, or the Unicode superscript T.
_T = r"(?:\^\s*\{?\s*(?:\\top|T)\s*\}?(?![A-Za-z])|ᵀ)"
# A vector: one lowercase letter, maybe with a subscript (x_i, q_{1}, k_j).
_VEC = r"[a-z](?:_\{[^{}]*\}|_[A-Za-z0-9]+)?"
# Something ranging over a list of positions: a comma and an ellipsis.
_DOTS = r"\s*,\s*(?:\\dots|\\ldots|\\cdots|…|\.\.\.)"

OLD_FORMS = {
    # x_i^T x_j, q^\top k, k_j^T q_i: the left factor transposed, a column times a
    # row. Not a^T a, the outer product of the softmax's Jacobian.
    "column-vector dot product": re.compile(
        rf"(?<![A-Za-z\\])(?!a\s*{_T}\s*a(?![A-Za-z_])){_VEC}\s*{_T}\s*{_VEC}(?![A-Za-z])"
    ),
    # a a^T, a aᵀ: for a row a this is a number, not the softmax's n x n term.
    "column-vector outer product a a^T": re.compile(rf"(?<![A-Za-z\\])a\s*a\s*{_T}"),
    # z_1, z_2, ... or z_1, \dots (but not z_0, z_1, \dots, which starts at 0).
    "list of scores from z_1": re.compile(rf"(?<![,\s])\s*z_\{{?1\}}?(?:{_DOTS}|\s*,\s*z_\{{?2\}}?)"),
    # ..., z_n or z_{n}: the last of n scores is z_{n-1}.
    "last score z_n": re.compile(r"\bz_\{?n\}?(?![\w{}-])"),
    # \sum_{l=1}, \sum_{r = 1}^{d_k}: a sum over positions or coordinates from 1.
    "sum from 1": re.compile(r"_\{\s*[ijklr]\s*=\s*1\s*\}"),
    # l = 1, \dots, n and 1, \dots, n: a range of positions from 1.
    "range from 1": re.compile(rf"(?:\b[ijklr]\s*=\s*)?(?<![\d.])1{_DOTS}\s*,?\s*n\b(?!\s*[-−])"),
}

# Places that quote the paper's column-vector form on purpose: file -> phrases.
ALLOWED: dict[str, set[str]] = {
    "appendix/notation.md": {"q_i^\\top k_j", "x_i^\\top x_j"},
    "chapters/01_self_attention.md": {"x_i^{\\top} x_j"},
    "chapters/03_queries_keys_values.md": {"q_i^\\top k_j"},
}


def old_notation(text: str) -> list[str]:
    """Every phrase of ``text`` written in one of ``OLD_FORMS`` (the column-vector notation), in order."""
    found = [(m.start(), m.group(0).strip()) for pattern in OLD_FORMS.values() for m in pattern.finditer(text)]
    return [phrase for _, phrase in sorted(found)]


def _json_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def _notebook_text(path: Path, markdown_only: bool) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown" or not markdown_only)


def _python_strings(path: Path) -> str:
    """The docstrings and messages of a module: every string constant in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return "\n".join(
        node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def learner_text(path: Path) -> str:
    """What a learner reads in ``path``."""
    if path.suffix == ".json":
        return "\n".join(_json_strings(json.loads(path.read_text(encoding="utf-8"))))
    if path.suffix == ".ipynb":
        # The exercises a learner receives are read whole; the solutions' code is not theirs.
        return _notebook_text(path, markdown_only=path.parts[-3] == "solutions")
    if path.suffix == ".py":
        return _python_strings(path)
    return path.read_text(encoding="utf-8")


LEARNER_FILES = sorted(
    path
    for pattern in (
        "chapters/*.md",
        "chapters/*.json",
        "appendix/*.md",
        "solutions/*.md",
        "solutions/*/*.md",
        "solutions/*/*.ipynb",
        "exercises/*/*.ipynb",
        "sdpa_course/lib/*.py",
        "sdpa_course/teaching/*.py",
        "sdpa_course/grading/*.py",
    )
    for path in ROOT.glob(pattern)
)


def test_the_scan_covers_every_kind_of_learner_text():
    names = {str(path.relative_to(ROOT)) for path in LEARNER_FILES}
    for expected in (
        "chapters/01_self_attention.md",
        "chapters/02_raw_dot_product_scores.quiz.json",
        "chapters/05_why_divide_by_sqrt_dk.cards.json",
        "appendix/notation.md",
        "solutions/hw1_dot_product_scores/hw1_dot_product_scores.ipynb",
        "solutions/hw1_dot_product_scores/reasoning.md",
        "exercises/hw1_dot_product_scores/hw1_dot_product_scores.ipynb",
        "sdpa_course/lib/scores.py",
        "sdpa_course/lib/softmax.py",
        "sdpa_course/teaching/study.py",
    ):
        assert expected in names


@pytest.mark.parametrize("path", LEARNER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_learner_text_writes_row_vectors_and_counts_from_0(path):
    name = str(path.relative_to(ROOT))
    stray = [phrase for phrase in old_notation(learner_text(path)) if phrase not in ALLOWED.get(name, set())]
    assert not stray, (
        f"{name} writes the old notation {stray}: with row vectors write x_i x_j^T, q_i k_j^T, "
        "diag(a) - a^T a, and count positions and coordinates from 0 (z_0, ..., z_{n-1}); "
        "a deliberate quote of the paper's form goes in ALLOWED with its file and exact phrase"
    )


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_every_allowed_quote_is_still_on_its_page(name):
    found = set(old_notation(learner_text(ROOT / name)))
    assert ALLOWED[name] <= found, f"{name} no longer quotes {ALLOWED[name] - found}: remove them from ALLOWED"


@pytest.mark.parametrize(
    "text",
    [
        r"$e_{ij} = x_i^\top x_j$",
        r"$e_{ij} = x_i^{\top} x_j$",
        "e_ij = x_i^T x_j",
        r"$q_1^\top k_0 = 2$",
        r"$q^\top k = \sum_r q_r k_r$",
        "J = diag(a) − a aᵀ",
        r"$J = \mathrm{diag}(a) - a a^\top$",
        "``J = diag(a) - a a^T``",
        r"scores $z_1, z_2, \dots, z_n$",
        r"scores $z_1, \dots$",
        r"$\sum_{l=1}^{n} e^{z_l}$",
        r"$\sum_{r = 1}^{d_k} q_r k_r$",
        r"for $l = 1, \dots, n$",
        "positions 1, ..., n",
    ],
)
def test_the_scan_finds_each_old_form(text):
    assert old_notation(text), text


@pytest.mark.parametrize(
    "text",
    [
        r"$e_{ij} = x_i x_j^\top = x_j x_i^\top$",
        r"$e_{ij} = q_i k_j^\top = x_i W_Q W_K^\top x_j^\top$",
        "e_ij = x_i x_j^T",
        r"$E = X X^\top$, $dV = A^\top dO$, $dK = dS^\top Q$",
        "the matrix product `x @ xᵀ`",
        r"$J = \mathrm{diag}(a) - a^\top a$",
        "J = diag(a) − aᵀ a",
        r"scores $z_0, z_1, \dots, z_{n-1}$",
        r"$\sum_{l=0}^{n-1} e^{z_l}$",
        r"$r = 0, 1, \dots, d - 1$",
        r"positions $0, 1, \dots, n - 1$",
        "For i = 0, j = 1: δ₀₁ = 0",
        r"$\lVert x \rVert = \sqrt{x x^\top}$",
        r"$a^\top$ is a column",
    ],
)
def test_the_scan_passes_row_vector_forms(text):
    assert old_notation(text) == [], text


# Symbols that appendix/notation.md gives one meaning, and the forms that would give them another.
OTHER_MEANINGS = {
    r"the loss is \mathcal{L} (L is chapter 11's block length)": re.compile(r"\\partial L\b|\bL\(q\b"),
    r"a finite difference steps by \Delta (h counts heads)": re.compile(r"\\pm h\b|/\s*\(?2h\b"),
    r"\ell is the online softmax's running sum (a head's index is g)": re.compile(r"\\ell\b"),
}
# Where the running sum is taught: chapter 8, its homework, and the notation page.
RUNNING_SUM_PAGES = ("online_softmax", "appendix/notation.md")


@pytest.mark.parametrize("meaning", sorted(OTHER_MEANINGS))
def test_each_symbol_keeps_its_one_meaning(meaning):
    pattern = OTHER_MEANINGS[meaning]
    stray = []
    for path in LEARNER_FILES:
        name = str(path.relative_to(ROOT))
        if pattern.pattern == r"\\ell\b" and any(page in name for page in RUNNING_SUM_PAGES):
            continue
        stray += [f"{name}: {m.group(0)}" for m in pattern.finditer(learner_text(path))]
    assert not stray, f"{meaning}: {stray}"
