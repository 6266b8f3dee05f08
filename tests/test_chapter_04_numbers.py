"""Chapter 4's built page shows seed 002's toy example with the exact numbers.

The expected digits are computed here, independently of lib and of the
chapter, by the plain-Python attention of ``tests/naive.py`` (math.exp on
floats). The page must print them in its cell outputs (so they came out of the
chapter's code), and the seed's slipped digits may appear only inside the
admonition that explains the slip.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
import pytest
from built_book import built_page
from naive import naive_attention

PAGE = "chapters/04_scaled_dot_product_attention.html"

# Seed 002's toy example, typed from the seed: Q (1x2), K (2x2), V (2x2).
TOY_Q = [[1.0, 0.0]]
TOY_K = [[1.0, 0.0], [0.0, 1.0]]
TOY_V = [[2.0, 3.0], [4.0, 5.0]]

# The digits seed 002 prints for the weights and the output (they slip).
SEED_SLIPPED = ("0.66974149", "0.33025851", "2.66051702", "3.66051702")

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def exact_digits() -> tuple[list[str], list[str]]:
    """Weights and output of the toy example, formatted to 8 decimals."""
    outputs, weights = naive_attention(TOY_Q, TOY_K, TOY_V)
    return [f"{x:.8f}" for x in weights[0]], [f"{x:.8f}" for x in outputs[0]]


class _Regions(HTMLParser):
    """Splits a page's text into cell outputs, admonitions (notes) and the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, set[str]]] = []
        self.text = {"output": [], "admonition": [], "other": []}

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append((tag, set((dict(attrs).get("class") or "").split())))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        # A hidden code cell is a collapsible "admonition hide"; a note is not.
        if any("admonition" in c and "hide" not in c for _, c in self.stack):
            self.text["admonition"].append(data)
        elif any("cell_output" in c for _, c in self.stack):
            self.text["output"].append(data)
        else:
            self.text["other"].append(data)


@pytest.fixture(scope="module")
def regions() -> dict[str, str]:
    parser = _Regions()
    parser.feed(built_page(PAGE))
    return {name: "".join(chunks) for name, chunks in parser.text.items()}


def test_the_independent_values_differ_from_the_seeds_digits():
    weights, output = exact_digits()
    assert not set(weights + output) & set(SEED_SLIPPED)


def test_page_prints_the_exact_weights_and_output_in_cell_outputs(regions):
    weights, output = exact_digits()
    printed = regions["output"]
    assert re.search(r"\s+".join(map(re.escape, weights)), printed), (
        f"the weights {weights} are not printed side by side in a cell output of chapter 4"
    )
    assert re.search(r"\s+".join(map(re.escape, output)), printed), (
        f"the output {output} is not printed side by side in a cell output of chapter 4"
    )


def test_seeds_slipped_digits_appear_only_in_the_note_about_the_slip(regions):
    for digits in SEED_SLIPPED:
        assert digits in regions["admonition"], f"the note about the slip does not quote {digits}"
        for name in ("output", "other"):
            assert digits not in regions[name], f"the seed's slipped {digits} appears outside the note ({name})"
