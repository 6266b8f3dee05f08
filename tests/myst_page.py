"""A one-cell MyST notebook page, for tests that build a small book of their own."""

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def myst_page(title: str, code: str) -> str:
    """A page with ``title`` and one code cell holding ``code``."""
    return f"{HEADER}# {title}\n\n```{{code-cell}} ipython3\n{code}\n```\n"
