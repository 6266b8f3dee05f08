"""A changed file in the book's ``_static`` folder reaches the built site.

Sphinx copies the static files when it writes pages, and it writes none when no
page changed ("no targets are out of date"): an edited ``course.css`` or
``scroll_cues.js`` would stay old in ``_build/html`` however often the book is
built. Every page also names each script and style sheet with a checksum of its
content (``scroll_cues.js?v=...``), so that a browser fetches the new file
instead of its cached copy, and that name is in the page's HTML.

So when a file under a static folder of the book itself (not the installed
themes' and extensions' folders, which change only with their pinned versions)
is not what the last build saw (or the last build did not look), every page
is written again: their checksums change, and Sphinx copies the static files.
The pages are read again from the execution cache; no chapter runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from nbgrader_tools.content_hash import files_hash

logger = logging.getLogger(__name__)


def own_static_folders(app: Sphinx) -> list[Path]:
    """The folders of ``html_static_path`` inside the book's source folder."""
    source = Path(app.srcdir).resolve()
    folders = [(Path(app.confdir) / entry).resolve() for entry in app.config.html_static_path]
    return [f for f in folders if f.is_dir() and f.is_relative_to(source)]


def on_get_outdated(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    now = files_hash((p for folder in own_static_folders(app) for p in folder.rglob("*")), Path(app.srcdir))
    before = getattr(env, "course_static_digest", None)
    env.course_static_digest = now  # type: ignore[attr-defined]
    if before == now:
        return []
    if env.all_docs:  # not the first build: say why every page is written again
        logger.info("static_freshness: a static file changed; every page is written again with its new checksum")
    return sorted(env.found_docs - removed)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-get-outdated", on_get_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
