"""A "Run in the browser" button on every chapter and homework page.

It opens the page's notebook in the JupyterLite that ``python -m lite``
builds into the site's ``lite/`` folder (``./course build`` runs both): a
Jupyter with a Python kernel running in the browser itself (Pyodide), served
from the site, that works offline. The button sits in the page header, and the
same link heads the launch menu (beside Binder, Colab and JupyterHub).

Listed under ``sphinx: local_extensions`` in ``_config.yml`` (as ``lite.links``).
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

from .markdown import notebook_path

# Pages with a notebook in JupyterLite's contents (lite.contents.sources).
LITE_FOLDERS = ("chapters/", "exercises/")
# The single-notebook interface of JupyterLite (under the site root).
LITE_NOTEBOOKS = "lite/notebooks/index.html"
LABEL = "Run in the browser"
TOOLTIP = "Run this page's code in your browser (JupyterLite: Python in the page, no install, works offline)"


def lite_url(pagename: str, pathto: Any) -> str:
    """The address, relative to the page, that opens its notebook in JupyterLite."""
    return f"{pathto(LITE_NOTEBOOKS, 1)}?path={notebook_path(pagename)}"


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


#: id of the message shown instead of a blank JupyterLite on a site opened from files.
FILE_MESSAGE_ID = "lite-needs-http"
#: The command that serves a copied site folder (no course repository needed).
SERVE_COMMAND = 'python3 -m http.server --bind 127.0.0.1 --directory "{folder}" 8000'

# JupyterLite needs a page served over HTTP (its kernel runs in a web worker and
# its files come from a service worker and fetch, which browsers refuse on
# file://). On a page opened from files, the button says so, with the command
# that serves the folder, instead of opening a blank page.
FILE_PROTOCOL_JS = (
    """
document.addEventListener('click', function (event) {
  if (window.location.protocol !== 'file:') return;
  var link = event.target.closest && event.target.closest('a[href*="LITE"]');
  if (!link) return;
  event.preventDefault();
  var target = new URL(link.getAttribute('href'), window.location.href);
  var cut = target.pathname.indexOf('/LITE');
  var folder = decodeURIComponent(target.pathname.slice(0, cut)) || '/';
  var page = decodeURIComponent(window.location.pathname).slice(folder.length + 1);
  var old = document.getElementById('ID');
  if (old) old.remove();
  var box = document.createElement('div');
  box.id = 'ID';
  box.setAttribute('role', 'alertdialog');
  box.setAttribute('aria-labelledby', 'ID-title');
  // Centred between 1rem margins, never wider than the screen nor taller: on a
  // phone the whole message and its Close button stay in reach.
  box.style.cssText = 'position:fixed;z-index:10000;left:1rem;right:1rem;top:5rem;margin:0 auto;' +
    'max-width:42rem;max-height:calc(100vh - 6rem);overflow:auto;box-sizing:border-box;' +
    'padding:1rem 1.25rem;background:var(--pst-color-background,#fff);' +
    'color:var(--pst-color-text-base,#222);border:2px solid var(--pst-color-primary,#0a4d8c);' +
    'border-radius:.5rem;box-shadow:0 .5rem 2rem rgba(0,0,0,.3)';
  var title = document.createElement('p');
  title.id = 'ID-title';
  title.style.fontWeight = 'bold';
  title.textContent = 'Run in the browser needs the site served over HTTP';
  var text = document.createElement('p');
  text.textContent = 'This page was opened from a file, and browsers do not run the in-browser Jupyter ' +
    'from files. Serve the site\u2019s folder on this computer: in a terminal, run';
  var code = document.createElement('pre');
  code.textContent = 'COMMAND'.replace('{folder}', folder);
  var then = document.createElement('p');
  then.textContent = 'then open http://127.0.0.1:8000/' + page + ' and click Run in the browser again. ' +
    'The pages themselves work from files.';
  // A long folder or address breaks anywhere rather than run past the box.
  code.style.whiteSpace = 'pre-wrap';
  code.style.overflowWrap = 'anywhere';
  then.style.overflowWrap = 'anywhere';
  var close = document.createElement('button');
  close.type = 'button';
  close.textContent = 'Close';
  close.addEventListener('click', function () { box.remove(); });
  box.append(title, text, code, then, close);
  document.body.appendChild(box);
  close.focus();
}, true);
""".replace("LITE", LITE_NOTEBOOKS.split("/", 1)[0] + "/")
    .replace("ID", FILE_MESSAGE_ID)
    .replace("COMMAND", SERVE_COMMAND)
)


def setup(app: Sphinx) -> dict[str, Any]:
    # After sphinx-book-theme has made its header and launch buttons (priority 501).
    app.connect("html-page-context", add_lite_button, priority=510)
    app.add_js_file(None, body=FILE_PROTOCOL_JS)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
