"""teaching.explorer on its own: declarations, the static HTML and the live widgets."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

from sdpa_course import lib
from sdpa_course.teaching.explorer import MODE_VARIABLE, Choice, Explorer, Slider, Toggle

SCORES = np.array([1.0, 0.0, -1.0])


def draw(fig, c, shown, sort):
    """Bar chart of softmax(c * SCORES); the alt text names the largest weight."""
    a = lib.softmax(c * SCORES)
    fig.subplots().bar(range(3), np.sort(a) if sort else a, color="C0" if shown == "weights" else "C1")
    return f"largest weight {a.max():.3f} at c = {c}"


def make(**options):
    return Explorer(
        "demo",
        draw,
        Slider("c", "factor c", [0.5, 1, 2], value=1),
        Choice("shown", "show", ["weights", "other"]),
        Toggle("sort", "sort"),
        **options,
    )


def test_every_setting_has_a_key_and_a_figure():
    explorer = make()
    assert explorer.state_count() == 12
    assert explorer.start() == {"c": 1, "shown": "weights", "sort": False}
    assert explorer.key() == "1-0-0" and explorer.key(c=2, sort=True) == "2-0-1"
    png, alt = explorer.render(c=2)
    assert png.startswith(b"\x89PNG") and alt == f"largest weight {np.exp(2) / np.exp([2, 0, -2]).sum():.3f} at c = 2"
    assert explorer.render(c=2) == (png, alt)  # the same bytes every time
    assert explorer.render(c=0.5)[0] != png


def test_static_html_holds_every_state_and_labelled_controls():
    explorer = make()
    page = explorer.to_html()
    states = json.loads(re.search(r'class="explorer-states">(.*?)</script>', page).group(1))
    assert sorted(states) == sorted(k for k, _ in explorer.settings())
    png, alt = explorer.render(c=0.5, shown="other", sort=True)
    assert states["0-1-1"] == {"png": base64.b64encode(png).decode("ascii"), "alt": alt}
    for ident in ("explorer-demo-c", "explorer-demo-shown", "explorer-demo-sort"):
        assert f'id="{ident}"' in page and f'<label for="{ident}">' in page
    assert 'type="range"' in page and "<select" in page and 'type="checkbox"' in page
    assert 'data-state="1-0-0"' in page  # starts at the declared setting


def test_display_is_static_html_in_the_build_and_widgets_in_a_live_kernel(monkeypatch):
    explorer = make()
    monkeypatch.setenv(MODE_VARIABLE, "static")
    assert set(explorer._repr_mimebundle_()) == {"text/html", "text/plain"}
    monkeypatch.setenv(MODE_VARIABLE, "auto")
    assert set(explorer._repr_mimebundle_()) == {"application/vnd.jupyter.widget-view+json", "text/plain"}


def test_live_widgets_redraw_with_the_same_figure():
    explorer = make()
    box = explorer.widget()
    slider, choice, toggle = box.children[0].children
    image, status = box.children[1], box.children[2]
    assert image.value == explorer.render()[0]
    slider.value = 2
    toggle.value = True
    assert image.value == explorer.render(c=2, sort=True)[0]
    assert status.value == explorer.render(c=2, sort=True)[1]
    choice.value = "other"
    assert image.value == explorer.render(c=2, shown="other", sort=True)[0]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Explorer("demo", draw), "has no controls"),
        (lambda: Explorer("bad name!", draw, Toggle("sort", "sort")), "letters, digits and '-'"),
        (lambda: Explorer("demo", draw, Toggle("c", "a"), Toggle("c", "b")), "two controls with the same name"),
        (lambda: Explorer("demo", draw, Slider("c", "c", [1, 2], value=3)), "start value 3"),
        (lambda: Explorer("demo", draw, Slider("c", "c", [])), "has no values"),
        (lambda: Explorer("demo", draw, Slider("c", "c", range(9)), Slider("d", "d", range(9))), "81 settings"),
        (lambda: Explorer("demo", draw, Slider("c", "c", [1, 2], names=["one"])), "2 values but 1 names"),
        (
            lambda: Explorer("demo", lambda fig, c: "", Slider("c", "c", [1])).render(),
            "must return the figure's alt text",
        ),
        (lambda: make().key(d=1), "has no control ['d']"),
    ],
)
def test_bad_declarations_are_named(build, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        build()
