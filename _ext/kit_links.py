"""The ``{learner-kit}`` directive: the learner kit's downloads and its two install lines.

The file names come from ``nbgrader_tools.kit`` (the one place that names
them); the links lead to the site's ``kit/`` folder, which ``./course build``
fills after the book itself (``./course kit``). Listed under ``sphinx:
local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from nbgrader_tools import kit


class LearnerKit(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        # The page shows kit.py's file names and install lines: it is written again when they change.
        self.env.note_dependency(kit.__file__)
        depth = self.env.docname.count("/")
        return [nodes.raw("", kit.download_html("../" * depth + "kit/"), format="html")]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("learner-kit", LearnerKit)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
