"""A "Run in the browser" button on every chapter and homework page.

It opens the page's notebook in the JupyterLite that ``_ext/lite_build.py``
builds into the site's ``lite/`` folder (``./course build`` runs both): a
Jupyter with a Python kernel running in the browser itself (Pyodide), served
from the site, that works offline. The button sits in the page header, and the
same link heads the launch menu (beside Binder, Colab and JupyterHub).

Listed under ``sphinx: local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

# Pages with a notebook in JupyterLite's contents (see lite_build.stage_contents).
LITE_FOLDERS = ("chapters/", "exercises/")
# The single-notebook interface of JupyterLite (under the site root).
LITE_NOTEBOOKS = "lite/notebooks/index.html"
LABEL = "Run in the browser"
TOOLTIP = "Run this page's code in your browser (JupyterLite: Python in the page, no install, works offline)"


def lite_url(pagename: str, pathto: Any) -> str:
    """The address, relative to the page, that opens its notebook in JupyterLite."""
    return f"{pathto(LITE_NOTEBOOKS, 1)}?path={pagename}.ipynb"


def add_lite_button(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    if not pagename.startswith(LITE_FOLDERS) or "header_buttons" not in context:
        return
    url = lite_url(pagename, context["pathto"])
    buttons = context["header_buttons"]
    buttons.insert(
        0,
        {
            "type": "link",
            "url": url,
            "tooltip": TOOLTIP,
            "icon": "fas fa-play",
            "label": "lite-button",
            "text": LABEL,
        },
    )
    for group in buttons:
        if group.get("label") == "launch-buttons":
            group["buttons"].insert(
                0,
                {
                    "type": "link",
                    "url": url,
                    "tooltip": TOOLTIP,
                    "icon": "fas fa-play",
                    "text": f"{LABEL} (JupyterLite)",
                    "label": "lite-launch-button",
                },
            )


def setup(app: Sphinx) -> dict[str, Any]:
    # After sphinx-book-theme has made its header and launch buttons (priority 501).
    app.connect("html-page-context", add_lite_button, priority=510)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
