"""The browser tests' watchdog (``browser.renderers_killed_after``): a renderer that runs a
script forever answers no step of Playwright's, whatever its limit, and would hold its test
until pytest-timeout ends it. Killed by the watchdog, the step waiting for it fails at once."""

from __future__ import annotations

import pytest
from browser import renderers_killed_after


def test_a_renderer_that_never_answers_is_killed_and_its_page_fails_at_once(book_browser):
    context = book_browser.new_context()
    try:
        page = context.new_page()
        page.goto("data:text/html,<p>a page whose script never ends</p>")
        page.evaluate("() => { setTimeout(() => { for (;;) {} }, 50); }")
        with renderers_killed_after(2, book_browser.pid) as killed, pytest.raises(Exception, match="crashed"):
            page.wait_for_function("() => false", polling=50, timeout=600_000)
        # A crash, not the step's own limit of ten minutes, ended the wait.
        assert killed, "the watchdog killed no renderer"
        # The browser goes on: a new page gets a renderer of its own.
        assert context.new_page().evaluate("1 + 1") == 2
    finally:
        context.close()
