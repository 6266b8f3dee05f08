"""What a cell prints in pieces shows on the page as it was printed
(``_ext/stream_pieces.py``), whichever way the kernel cut it."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from stream_pieces import coalesce_exactly  # noqa: E402

PRINTED = "weights of query 0: [1. 0. 0.]\no_0 equals v_0: True\n"


def stream(text: str, name: str = "stdout") -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name=name, text=text)


@pytest.mark.parametrize("cut", [1, 19, 20, 31, 32, len(PRINTED) - 1])
def test_a_line_cut_anywhere_is_one_line_again(cut):
    merged = coalesce_exactly([stream(PRINTED[:cut]), stream(PRINTED[cut:])])
    assert [o["text"] for o in merged] == [PRINTED]


def test_streams_keep_their_names_and_other_outputs_their_place():
    image = nbformat.v4.new_output("display_data", data={"text/plain": "<figure>"})
    merged = coalesce_exactly([stream("a = "), stream("careful\n", "stderr"), image, stream("1\n")])
    assert [(o["output_type"], o.get("name"), o.get("text")) for o in merged] == [
        ("stream", "stdout", "a = 1\n"),
        ("stream", "stderr", "careful\n"),
        ("display_data", None, None),
    ]


def test_a_carriage_return_still_overwrites_its_line_as_in_a_terminal():
    merged = coalesce_exactly([stream("step 1\r"), stream("step 2\n")])
    assert merged[0]["text"] == "step 2\n"


def test_the_cached_outputs_are_left_as_they_were():
    first, second = stream("a = "), stream("1\n")
    coalesce_exactly([first, second])
    assert (first["text"], second["text"]) == ("a = ", "1\n")
