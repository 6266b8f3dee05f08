"""Numbers in a figure's alt text come from the page's computation, as in its prose.

myst-nb's glue pastes a value that a code cell computed into the prose and the
captions (``{glue:text}`key:.2f```). An image's alt text is an attribute, which
roles do not reach. This extension fills the same role, written the same way,
inside the alt text of every image, from the glue data that myst-nb saved for
the page. A key the page did not glue, or a format that does not fit the
value, is a warning, which fails the book's build (``-W``).

Listed under ``sphinx: local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from myst_nb.core.variables import format_plain_text
from myst_nb.ext.glue.crossref import read_glue_cache
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

GLUE_TEXT = re.compile(r"\{glue:text\}`([^`]+)`")


class GluedAltText(SphinxPostTransform):
    """Replace each ``{glue:text}`key:format``` in an image's alt text by the glued value."""

    default_priority = 5

    def run(self, **kwargs: Any) -> None:
        folder = self.env.mystnb_config.output_folder  # type: ignore[attr-defined]
        for image in self.document.findall(nodes.image):
            alt = image.get("alt", "")
            if "{glue:" not in alt:
                continue
            data = read_glue_cache(str(folder), self.env.docname)

            def fill(match: re.Match[str], image: nodes.image = image, data: dict[str, Any] = data) -> str:
                key, _, fmt = match[1].rpartition(":") if ":" in match[1] else (match[1], "", "s")
                plain = data.get(key, {}).get("data", {}).get("text/plain")
                if plain is None:
                    logger.warning(f"alt text names glue key {key!r}, which this page does not glue", location=image)
                    return match[0]
                try:
                    return str(format_plain_text(plain, fmt))
                except Exception as exc:  # the same failures myst-nb's own role reports
                    logger.warning(f"alt text: cannot format glue key {key!r} with {fmt!r}: {exc}", location=image)
                    return match[0]

            image["alt"] = GLUE_TEXT.sub(fill, alt)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(GluedAltText)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
