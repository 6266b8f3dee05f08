"""No published page links to the placeholder repository or JupyterHub; the
launch buttons come back once a real repository is set (``_ext/launch_links.py``).

The hook is tested three ways: its settings function on its own; the built
book (which has no repository set) for any link to a placeholder; and a small
Sphinx project built in a temporary folder with the book's theme and the hook,
once with a real-looking repository (the Binder and Colab buttons appear) and
once without (no launch button, and the notebook download stays).
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from launch_links import launch_settings, placeholder  # noqa: E402
from myst_page import myst_page  # noqa: E402

HTML = ROOT / "_build" / "html"
PLACEHOLDER_LINK = re.compile(r'href="[^"]*(example-org|example\.org|example\.com)[^"]*"')
REAL = "https://github.com/some-school/sdpa-course"
LAUNCH = {
    "notebook_interface": "jupyterlab",
    "binderhub_url": "https://mybinder.org",
    "colab_url": "https://colab.research.google.com",
    "jupyterhub_url": "",
    "thebe": False,
}


def test_placeholder_addresses_are_recognised():
    assert placeholder("https://github.com/example-org/sdpa-course")
    assert placeholder("https://jupyterhub.example.org")
    assert not placeholder(REAL) and not placeholder("https://mybinder.org")


def test_without_a_repository_every_launch_and_repository_button_is_off():
    options, on = launch_settings({"repository_url": "", "launch_buttons": dict(LAUNCH), "use_repository_button": True})
    assert not on
    assert not any(options["launch_buttons"].get(k) for k in ("binderhub_url", "colab_url", "jupyterhub_url"))
    assert options["use_repository_button"] is False and options["use_issues_button"] is False


def test_with_a_real_repository_binder_colab_and_the_repository_button_are_on():
    options, on = launch_settings({"repository_url": REAL, "launch_buttons": dict(LAUNCH)})
    assert on and options["use_repository_button"] is True
    assert options["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert "jupyterhub_url" not in options["launch_buttons"]  # empty: no JupyterHub button


@pytest.mark.parametrize(
    "options, words",
    [
        ({"repository_url": "https://github.com/example-org/sdpa-course"}, "repository: url is a placeholder"),
        (
            {"repository_url": REAL, "launch_buttons": {"jupyterhub_url": "https://jupyterhub.example.org"}},
            "jupyterhub_url is a placeholder",
        ),
        ({"repository_url": "https://gitlab.com/school/course"}, "must be https://github.com/<owner>/<name>"),
    ],
)
def test_placeholders_and_unsupported_repositories_fail_the_build(options, words):
    with pytest.raises(ExtensionError, match=re.escape(words)):
        launch_settings(options)


def test_config_sets_no_placeholder():
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert "launch_links" in config["sphinx"]["local_extensions"]
    launch_settings({"repository_url": config["repository"]["url"], "launch_buttons": config["launch_buttons"]})


def test_built_book_links_to_no_placeholder():
    pages = sorted(HTML.rglob("*.html"))
    if not pages:
        pytest.fail("the book has not been built: run ./course test (or ./course build) first")
    offenders = [
        f"{p.relative_to(HTML)}: {m.group(0)}"
        for p in pages
        for m in PLACEHOLDER_LINK.finditer(p.read_text(encoding="utf-8"))
    ]
    assert not offenders, "\n".join(offenders[:10])


PAGE = myst_page("A chapter", "print(1 + 1)")


def build_small_book(tmp_path: Path, repository_url: str) -> str:
    """Build a one-page MyST notebook with the book's theme and the hook; return the page's HTML."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "index.md").write_text(PAGE, encoding="utf-8")
    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        "extensions = ['myst_nb', 'launch_links']\n"
        "html_theme = 'sphinx_book_theme'\n"
        "nb_execution_mode = 'off'\n"
        f"html_theme_options = {{'repository_url': {repository_url!r}, 'repository_branch': 'main',\n"
        f"                      'path_to_docs': '', 'launch_buttons': {LAUNCH!r}}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "html"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", str(src), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return (out / "index.html").read_text(encoding="utf-8")


def test_small_book_with_a_real_repository_shows_the_launch_buttons(tmp_path):
    html = build_small_book(tmp_path, REAL)
    links = [urllib.parse.urlsplit(href) for href in re.findall(r'href="([^"]+)"', html)]
    paths = {
        host: [u.path for u in links if u.hostname == host] for host in ("mybinder.org", "colab.research.google.com")
    }
    assert [p.startswith("/v2/gh/some-school/sdpa-course/main") for p in paths["mybinder.org"]] == [True], paths
    colab = paths["colab.research.google.com"]
    assert [p.startswith("/github/some-school/sdpa-course/blob/main/index") for p in colab] == [True], paths
    assert 'href="' + REAL in html  # the repository button


def test_small_book_without_a_repository_shows_none_but_keeps_the_download(tmp_path):
    html = build_small_book(tmp_path, "")
    assert "mybinder.org" not in html and "colab.research.google.com" not in html
    assert "_sources/index.ipynb" in html
    assert (tmp_path / "html" / "_sources" / "index.ipynb").is_file()
