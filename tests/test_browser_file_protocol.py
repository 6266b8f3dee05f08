"""The built site opened from files (file://), as a learner with a copied folder would.

The pages work; "Run in the browser" cannot (JupyterLite needs HTTP), so it
shows a message with the command that serves the folder instead of a blank
page. Every request that is not a file of the site is blocked.
"""

from __future__ import annotations

import pytest
from browser import HTML, PHONE
from built_book import built_page

HOMEWORK_PAGE = "exercises/hw2_stable_softmax/hw2_stable_softmax.html"


@pytest.mark.parametrize("width", [1280, PHONE["width"]])
def test_run_in_the_browser_from_a_file_says_how_to_serve_the_folder(file_context, width):
    built_page(HOMEWORK_PAGE)
    page = file_context.new_page()
    page.set_viewport_size({"width": width, "height": 800})
    page.goto((HTML / HOMEWORK_PAGE).as_uri(), wait_until="load")
    assert page.url.startswith("file://")
    button = page.locator("a[href*='lite/notebooks/index.html']").first
    button.click()
    message = page.locator("#lite-needs-http")
    message.wait_for(state="visible")
    text = message.inner_text()
    assert page.url.startswith("file://") and "lite/" not in page.url, page.url
    assert f'python3 -m http.server --bind 127.0.0.1 --directory "{HTML}" 8000' in text, text
    assert f"http://127.0.0.1:8000/{HOMEWORK_PAGE}" in text, text
    assert "needs the site served over HTTP" in text
    # The box and everything in it stay on the screen, however long the folder's name.
    outside = page.evaluate(
        """() => [document.querySelector('#lite-needs-http'), ...document.querySelectorAll('#lite-needs-http *')]
        .map((e) => [e.tagName, e.getBoundingClientRect().left, e.getBoundingClientRect().right])
        .filter(([, left, right]) => left < 0 || right > window.innerWidth + 1)"""
    )
    assert not outside, f"the message runs past the edge of a {width} px screen: {outside}"
    page.get_by_role("button", name="Close").click()
    assert message.count() == 0
