"""A line a cell prints stays one line on the page.

The kernel sends what a cell prints in pieces, cut wherever its output thread
happened to flush: ``print("weights:", w)`` can arrive as ``"weights:"`` and
``" [1. 0.]\\n"``. myst-nb's ``nb_merge_streams`` joins the pieces of a stream,
but strips each piece and ends it with a newline, so a cut inside a line breaks
that line in two, and only on the builds where the flush fell there. This
extension joins the pieces of each stream exactly as they were written before
myst-nb's own merging runs (which then also applies ``\\r`` and ``\\b`` as
before), so the page shows what the cell printed, on every build.
"""

from __future__ import annotations

import copy
from typing import Any

import myst_nb.core.render as render
from sphinx.application import Sphinx

_MYST_NB_COALESCE = render.coalesce_streams


def join_stream_pieces(outputs: list[Any]) -> list[Any]:
    """Outputs with every stream's pieces concatenated, in order, into its first piece.

    >>> pieces = [{"output_type": "stream", "name": "stdout", "text": "weights:"},
    ...           {"output_type": "stream", "name": "stdout", "text": " [1. 0.]\\n"}]
    >>> [o["text"] for o in join_stream_pieces(pieces)]
    ['weights: [1. 0.]\\n']
    """
    joined: list[Any] = []
    streams: dict[str, Any] = {}
    for output in outputs:
        if output["output_type"] != "stream":
            joined.append(output)
        elif output["name"] in streams:
            streams[output["name"]]["text"] += output["text"]
        else:
            # A copy: the outputs belong to the executed notebook in the cache.
            streams[output["name"]] = copy.deepcopy(output)
            joined.append(streams[output["name"]])
    return joined


def coalesce_exactly(outputs: list[Any]) -> list[Any]:
    return _MYST_NB_COALESCE(join_stream_pieces(outputs))


def setup(app: Sphinx) -> dict[str, Any]:
    render.coalesce_streams = coalesce_exactly
    return {"parallel_read_safe": True, "parallel_write_safe": True}
