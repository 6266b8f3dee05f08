"""A self-contained site: every script, style and font a page loads comes from
the book's own ``_static`` folder, never from a CDN.

By default a Jupyter Book page loads MathJax, the Jupyter widget manager and
Thebe from public CDNs; behind a firewall, in an exam room or in an archived
copy the formulas would then show as raw TeX. This extension (listed under
``sphinx: local_extensions`` in ``_config.yml``) fixes that:

- MathJax 3 comes from the pinned PyPI package ``sphinx-mathjax-offline``
  (loaded beside this extension), which copies it to ``_static/mathjax``. It
  is loaded on every page, since quizzes and flashcards hold TeX too, and
  without ``defer``, since their scripts need it while the page is parsed.
- The widget manager (npm ``@jupyter-widgets/html-manager``) and RequireJS come
  from npm, pinned in ``_ext/package-lock.json`` and installed into
  ``_ext/node_modules`` by ``./course`` (``npm ci``). The files a page needs are
  copied to ``_static/widgets`` and myst-nb is told to load them from there,
  after ``widgets-setup.js``, which makes the manager find its fonts there,
  gives the explorers' saved plots alt text and typesets widget labels with
  the page's MathJax 3.
- The chapters' explorers (``sdpa_course/teaching/explorer.py``) are told, through the
  environment variable ``TEACHING_EXPLORERS=static`` that the kernels running
  the chapters inherit, to emit their static form: every setting drawn at
  build time and swapped by a few lines of JavaScript, no widget state.
- The flashcard scheduler of the review page (npm ``ts-fsrs``, pinned the
  same way) is copied to ``_static/study``, beside the catalogue of every
  chapter's questions and cards that the progress and review pages read.
- Thebe is switched off: sphinx-thebe would write a CDN address for thebe on
  every page (Binder, Colab and JupyterHub launch buttons are plain links).
- jupyterquiz and jupytercards inline a fallback that loads MathJax from a CDN
  if the page's MathJax is not ready; it is pointed at the local copy instead.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"
LOCK = HERE / "package-lock.json"

# Read by sdpa_course/teaching/explorer.py (MODE_VARIABLE) in the kernels that run the chapters.
EXPLORER_MODE_VARIABLE = "TEACHING_EXPLORERS"

# npm package -> files (relative to the package) served under _static/widgets.
WIDGET_FILES: dict[str, list[str]] = {
    "requirejs": ["require.js"],
    "@jupyter-widgets/html-manager": ["dist/embed-amd.js"],
}
# npm package -> files served under _static/study: the flashcard scheduler
# (FSRS) that the review page runs (loaded by _static/progress.js).
STUDY_FILES: dict[str, list[str]] = {
    "ts-fsrs": ["dist/index.umd.js"],
}
STUDY_NAMES = {"dist/index.umd.js": "ts-fsrs.umd.js"}

# Fonts that embed-amd.js loads relative to its own address (Font Awesome icons).
WIDGET_FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")

# Our own script, run before the manager (see the file for what it does).
WIDGET_SETUP = HERE / "widgets-setup.js"

# What myst-nb puts on a page that holds saved widget state (paths are under _static).
IPYWIDGETS_JS: dict[str, dict[str, str]] = {
    "widgets/require.js": {},
    "widgets/widgets-setup.js": {},
    "widgets/embed-amd.js": {},
}

# CDN addresses that packages write into page bodies -> the local copy (under the site root).
BODY_REWRITES: dict[str, str] = {
    # jupyterquiz's and jupytercards' fallback loader for MathJax 3.
    "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js": "_static/mathjax/tex-svg.js",
}


def _locked_versions() -> dict[str, str]:
    lock = json.loads(LOCK.read_text(encoding="utf-8"))
    return {name: lock["packages"][f"node_modules/{name}"]["version"] for name in {**WIDGET_FILES, **STUDY_FILES}}


def _installed_version(name: str) -> str | None:
    manifest = NODE_MODULES / name / "package.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text(encoding="utf-8")).get("version")


def check_web_assets() -> None:
    """Fail with a clear message if the pinned npm packages are not installed."""
    for name, want in _locked_versions().items():
        have = _installed_version(name)
        if have != want:
            found = "is not installed" if have is None else f"is version {have}"
            raise ExtensionError(
                f"offline_site: the web asset {name}@{want} (pinned in _ext/package-lock.json) "
                f"{found} in _ext/node_modules. Build with ./course build, which runs "
                "`npm ci` in _ext/, or run it yourself: (cd _ext && npm ci --ignore-scripts)."
            )


def copy_widget_assets(app: Sphinx) -> None:
    """Copy the widget manager's files to _static/widgets.

    Done at every build, before anything is written, so that a change of
    the pinned versions or of widgets-setup.js reaches the site even when no page
    needs rewriting (Sphinx then skips copying its own static files).
    """
    check_web_assets()
    target = Path(app.outdir) / "_static" / "widgets"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for package, files in WIDGET_FILES.items():
        root = NODE_MODULES / package
        for rel in files:
            shutil.copy2(root / rel, target / Path(rel).name)
    shutil.copy2(WIDGET_SETUP, target / WIDGET_SETUP.name)
    dist = NODE_MODULES / "@jupyter-widgets/html-manager/dist"
    for font in dist.iterdir():
        if font.suffix in WIDGET_FONT_SUFFIXES:
            shutil.copy2(font, target / font.name)
    study = Path(app.outdir) / "_static" / "study"
    study.mkdir(parents=True, exist_ok=True)
    for package, files in STUDY_FILES.items():
        for rel in files:
            shutil.copy2(NODE_MODULES / package / rel, study / STUDY_NAMES.get(rel, Path(rel).name))
    write_study_catalog(Path(app.srcdir) / "chapters", study / "catalog.js")


def write_study_catalog(chapters: Path, target: Path) -> None:
    """Every chapter's question and card ids, and the cards' text, for the
    progress and review pages (teaching.study.catalog_script). Written at
    every build from the current files, so that no page shows an old deck."""
    from sdpa_course.teaching.study import StudyDataError, catalog_script

    try:
        target.write_text(catalog_script(chapters), encoding="utf-8")
    except StudyDataError as err:
        raise ExtensionError(f"offline_site: the study catalogue cannot be made: {err}") from None


def configure(app: Sphinx, config: Any) -> None:
    config.nb_ipywidgets_js = dict(IPYWIDGETS_JS)
    # The full TeX bundle: quiz and flashcard scripts typeset synchronously
    # (MathJax.typeset), which cannot wait for a TeX extension to load on demand.
    config.mathjax_path = "mathjax/tex-chtml-full.js"
    # Load MathJax before the page's body runs (Sphinx would add `defer`): the
    # quiz and flashcard scripts run while the page is parsed, and fail with a
    # TypeError when they find MathJax's configuration but not MathJax itself.
    config.mathjax_options = {**(config.mathjax_options or {}), "defer": None}


def rewrite_cdn_addresses(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    body = context.get("body")
    if not body:
        return
    for remote, local in BODY_REWRITES.items():
        if remote in body:
            body = body.replace(remote, context["pathto"](local, 1))
    context["body"] = body


def switch_off_thebe(app: Sphinx) -> None:
    """Disconnect sphinx-thebe's handlers that add the CDN script and its config."""
    app.setup_extension("sphinx_thebe")
    for event in ("env-before-read-docs", "doctree-resolved"):
        for listener in list(app.events.listeners.get(event, [])):
            module = getattr(listener.handler, "__module__", "")
            if module == "sphinx_thebe" and listener.handler.__name__ in (
                "init_thebe_core",
                "update_thebe_context",
            ):
                app.disconnect(listener.id)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx-mathjax-offline")
    # Sphinx adds MathJax only to pages whose source has math, but quizzes,
    # flashcards and widget labels carry TeX that Sphinx cannot see (the
    # flashcards appendix, say): load the local MathJax on every page.
    app.set_html_assets_policy("always")
    # The kernels that execute the chapters inherit this: explorers emit their
    # static HTML form (see sdpa_course/teaching/explorer.py), not live widgets.
    os.environ[EXPLORER_MODE_VARIABLE] = "static"
    switch_off_thebe(app)
    app.connect("config-inited", configure)
    app.connect("builder-inited", copy_widget_assets)
    app.connect("html-page-context", rewrite_cdn_addresses)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
