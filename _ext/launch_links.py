"""Launch and repository buttons appear only when they lead somewhere.

The Binder, Colab and JupyterHub buttons and the repository button open the
course's repository. Until it is published, no page may show them: a button
that leads to a missing repository is a link that leads nowhere. So:

- ``repository: url:`` in ``_config.yml`` is the one switch. Empty (the
  default): every launch button and the repository button are off, and the
  build says so. Set to ``https://github.com/<owner>/<name>``: the Binder and
  Colab buttons and the repository button come on, and the JupyterHub button
  too if ``launch_buttons: jupyterhub_url:`` is set.
- A placeholder address (a host under example.org/.com/.net, or the owner
  ``example-org``) in either setting fails the build with a message saying
  what to set; so does a repository that is not on GitHub (the theme builds
  Binder and Colab links for GitHub only).
- With the buttons off, the page still offers its notebook for download: the
  theme copies a MyST chapter's executed notebook into ``_sources`` only while
  it builds launch buttons, so this extension does that copy instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

#: Theme settings under ``launch_buttons`` that each make a button.
PROVIDERS = ("binderhub_url", "colab_url", "jupyterhub_url", "deepnote_url", "jupyterlite_url")
#: Theme settings that make a button pointing at the repository.
REPOSITORY_BUTTONS = ("use_repository_button", "use_issues_button", "use_edit_page_button")
PLACEHOLDER_HOSTS = ("example.org", "example.com", "example.net")
PLACEHOLDER_OWNERS = ("example-org",)


def placeholder(url: str) -> bool:
    """True when ``url`` is a documentation placeholder, never a real address.

    >>> placeholder("https://github.com/example-org/sdpa-course"), placeholder("https://jupyterhub.example.org")
    (True, True)
    >>> placeholder("https://github.com/some-school/sdpa-course")
    False
    """
    parts = urlparse(url)
    host = (parts.hostname or "").lower()
    owner = parts.path.strip("/").split("/")[0].lower() if parts.path.strip("/") else ""
    return any(host == h or host.endswith("." + h) for h in PLACEHOLDER_HOSTS) or owner in PLACEHOLDER_OWNERS


def launch_settings(theme_options: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The theme options to build with, and whether the buttons are on.

    Raises ExtensionError, naming the setting, for a placeholder address or a
    repository that is not ``https://github.com/<owner>/<name>``.

    >>> options, on = launch_settings({"repository_url": "", "launch_buttons": {"binderhub_url": "https://mybinder.org"}})
    >>> on, options["launch_buttons"], options["use_repository_button"]
    (False, {}, False)
    >>> options, on = launch_settings({"repository_url": "https://github.com/some-school/sdpa-course",
    ...                                "launch_buttons": {"binderhub_url": "https://mybinder.org"}})
    >>> on, options["launch_buttons"], options["use_repository_button"]
    (True, {'binderhub_url': 'https://mybinder.org'}, True)
    """
    options = dict(theme_options)
    launch = dict(options.get("launch_buttons") or {})
    repo = str(options.get("repository_url") or "").strip()
    for key in PROVIDERS:
        value = str(launch.get(key) or "")
        if value and placeholder(value):
            raise ExtensionError(
                f"_config.yml: launch_buttons: {key} is a placeholder ({value}); "
                "set your real address, or leave it empty to show no such button"
            )
    if repo and placeholder(repo):
        raise ExtensionError(
            f"_config.yml: repository: url is a placeholder ({repo}); set the real repository "
            "(https://github.com/<owner>/<name>), or leave it empty to turn the launch and repository buttons off"
        )
    if not repo:
        options["launch_buttons"] = {k: v for k, v in launch.items() if k not in PROVIDERS}
        for key in REPOSITORY_BUTTONS:
            options[key] = False
        return options, False
    parts = urlparse(repo)
    if parts.scheme != "https" or parts.hostname != "github.com" or len(parts.path.strip("/").split("/")) != 2:
        raise ExtensionError(f"_config.yml: repository: url must be https://github.com/<owner>/<name>; got {repo!r}")
    options["launch_buttons"] = {k: v for k, v in launch.items() if k not in PROVIDERS or v}
    options.setdefault("use_repository_button", True)
    return options, True


def _configure(app: Sphinx, config: Config) -> None:
    options, on = launch_settings(config.html_theme_options or {})
    config.html_theme_options = options
    if not on:
        LOGGER.info(
            "launch_links: no repository set (repository: url in _config.yml), "
            "so the launch and repository buttons are off"
        )


def _offer_notebook(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """With the launch buttons off, copy a MyST chapter's notebook for the download button."""
    launch = app.config.html_theme_options.get("launch_buttons") or {}
    if any(launch.get(key) for key in PROVIDERS):
        return  # the theme builds launch buttons and copies the notebook itself
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    if not str(context.get("sourcename", "")).endswith((".md", ".md.txt")):
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _configure, priority=900)
    # Before the theme's header buttons (priority 501), which read ipynb_source.
    app.connect("html-page-context", _offer_notebook, priority=500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
