"""Explorers: a figure that follows its controls, live or on the static page.

A chapter declares an explorer in a few lines: its controls, each with a
finite list of values, and a function that draws the figure for one setting
with :mod:`lib` and returns the figure's alt text::

    def draw(fig, t, view):
        ax = fig.subplots()
        ...                      # compute with lib, draw on ax
        return f"Heatmap of ... at t = {t}"

    Explorer("ch3-blend", draw,
             Slider("t", "blend t", [0.0, 0.5, 1.0]),
             Choice("view", "show", ["scores", "asymmetry"]))

The same object shows itself in two ways:

- On the book's static pages (the build sets ``TEACHING_EXPLORERS=static``, see
  ``_ext/offline_site.py``) and wherever ipywidgets is missing, it renders the
  figure for *every* combination of control values once, as PNG, and emits one
  self-contained HTML block: labelled native controls (``<input
  type="range">``, ``<select>``, checkbox) and a few lines of JavaScript that
  only swap in the precomputed image and its alt text. No kernel, no network,
  no second implementation of the maths in JavaScript.
- In a live kernel (JupyterLab, JupyterLite, Binder) it shows ipywidgets
  controls and redraws with the same ``draw`` function on each change.

Figures are drawn on a bare :class:`matplotlib.figure.Figure` (constrained
layout, never shown by pyplot) under matplotlib's default style with an opaque
white background, and stored as 256-colour PNG: a setting gives the same PNG
bytes in the build's kernel, in a live kernel and in the tests, and stays
readable in the site's dark mode.

Why not save the widgets' state instead (ipywidgets' embedding)? A saved state
holds one setting, not all of them: the controls would move and nothing would
change. Precomputing every setting keeps the explorer honest and light: the
pages load no widget manager (its script, ``embed-amd.js``, is 3.6 MB of JavaScript).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import matplotlib
import matplotlib.style
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

__all__ = ["Explorer", "Slider", "Choice", "Toggle", "MODE_VARIABLE"]

#: The environment variable that asks for the static HTML explorer ("static")
#: instead of live widgets ("auto", the default).
MODE_VARIABLE = "TEACHING_EXPLORERS"

# Many states are precomputed per explorer: refuse a declaration that would
# make the page heavy (the product of the controls' value counts).
MAX_STATES = 64

# The style every explorer figure is drawn in (on top of matplotlib's defaults).
STYLE: dict[str, Any] = {
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 100,
    "font.size": 10,
}

# Read by screen readers (announced on each change), not shown.
_HIDDEN = (
    "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;"
    "clip:rect(0,0,0,0);white-space:nowrap;border:0"
)

# Swaps the precomputed image for the controls' setting; nothing else.
_SCRIPT = """
(function () {
  var box = document.currentScript.parentElement;
  var states = JSON.parse(box.querySelector("script.explorer-states").textContent);
  var img = box.querySelector("img.explorer-figure");
  var status = box.querySelector(".explorer-status");
  var inputs = box.querySelectorAll("[data-control]");
  function index(input) {
    if (input.type === "checkbox") return input.checked ? 1 : 0;
    return Number(input.type === "range" ? input.value : input.selectedIndex);
  }
  function show() {
    var key = Array.prototype.map.call(inputs, index).join("-");
    var state = states[key];
    inputs.forEach(function (input) {
      var shown = box.querySelector("output[for='" + input.id + "']");
      if (input.type === "range") {
        var text = JSON.parse(input.dataset.labels)[index(input)];
        input.setAttribute("aria-valuetext", text);
        if (shown) shown.textContent = text;
      }
    });
    img.src = "data:image/png;base64," + state.png;
    img.alt = state.alt;
    img.dataset.state = key;
    status.textContent = state.alt;
  }
  inputs.forEach(function (input) {
    input.addEventListener("input", show);
    input.addEventListener("change", show);
  });
})();
"""


def _compact_png(png: bytes) -> bytes:
    """The same picture in 256 colours (a palette PNG): about a third of the bytes.

    Median-cut quantisation without dithering keeps flat areas flat and the
    colour maps' steps finer than the eye tells apart.
    """
    image = Image.open(io.BytesIO(png)).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _labels(control: _ListControl) -> list[str]:
    if control.names is None:
        return [control.fmt.format(v) for v in control.values]
    if len(control.names) != len(control.values):
        raise ValueError(f"control {control.name!r} has {len(control.values)} values but {len(control.names)} names")
    return [str(n) for n in control.names]


@dataclass(frozen=True)
class _ListControl:
    """A control over a finite list of values (shown with ``fmt``).

    ``names``, if given, are shown instead of the formatted values.
    """

    name: str
    label: str
    values: Sequence[Any]
    value: Any = None
    fmt: str = "{}"
    names: Sequence[str] | None = None

    def options(self) -> list[Any]:
        return list(self.values)

    def labels(self) -> list[str]:
        return _labels(self)


class Slider(_ListControl):
    """A slider over a finite list of values (shown with ``fmt``).

    ``names``, if given, are shown instead of the formatted values.
    """


class Choice(_ListControl):
    """A drop-down list of options (strings or numbers, shown with ``fmt``).

    ``names``, if given, are shown instead of the formatted values.
    """


@dataclass(frozen=True)
class Toggle:
    """A checkbox: off gives ``False``, on gives ``True``."""

    name: str
    label: str
    value: bool = False

    def options(self) -> list[Any]:
        return [False, True]

    def labels(self) -> list[str]:
        return ["off", "on"]


Control = Slider | Choice | Toggle


class Explorer:
    """A figure drawn by ``draw(fig, **setting) -> alt text`` for each setting of the controls.

    ``name`` identifies the explorer on its page (the HTML id ``explorer-<name>``);
    ``label`` names the group of controls for screen readers; ``size`` is the
    figure's size in inches (at 100 dots per inch).
    """

    def __init__(
        self,
        name: str,
        draw: Callable[..., str],
        *controls: Control,
        size: tuple[float, float] = (6.4, 4.0),
        label: str = "",
    ) -> None:
        if not name or not name.replace("-", "").isalnum():
            raise ValueError(f"an explorer's name must be letters, digits and '-'; got {name!r}")
        if not controls:
            raise ValueError(f"explorer {name!r} has no controls")
        names = [c.name for c in controls]
        if len(set(names)) != len(names):
            raise ValueError(f"explorer {name!r} has two controls with the same name: {names}")
        for c in controls:
            if not c.options():
                raise ValueError(f"explorer {name!r}: control {c.name!r} has no values")
            c.labels()  # names, if given, must match the values
            if c.value is not None and c.value not in c.options():
                raise ValueError(
                    f"explorer {name!r}: the start value {c.value!r} of control "
                    f"{c.name!r} is not one of its values {c.options()}"
                )
        self.name, self.draw, self.controls = name, draw, tuple(controls)
        self.size, self.label = size, label or name
        if self.state_count() > MAX_STATES:
            raise ValueError(
                f"explorer {name!r} has {self.state_count()} settings; at most "
                f"{MAX_STATES} are precomputed for the static page: use fewer values"
            )

    # ------------------------------------------------------------------ states

    def state_count(self) -> int:
        count = 1
        for c in self.controls:
            count *= len(c.options())
        return count

    def start(self) -> dict[str, Any]:
        """The setting shown first: each control's ``value``, else its first value."""
        return {c.name: (c.options()[0] if c.value is None else c.value) for c in self.controls}

    def settings(self) -> list[tuple[str, dict[str, Any]]]:
        """Every setting with its key: the controls' value indices joined by '-'."""
        out = []
        for combo in itertools.product(*(range(len(c.options())) for c in self.controls)):
            key = "-".join(map(str, combo))
            out.append((key, {c.name: c.options()[i] for c, i in zip(self.controls, combo)}))
        return out

    def key(self, **setting: Any) -> str:
        """The state key of a setting (given by value)."""
        full = {**self.start(), **setting}
        unknown = set(setting) - {c.name for c in self.controls}
        if unknown:
            raise ValueError(f"explorer {self.name!r} has no control {sorted(unknown)}")
        return "-".join(str(c.options().index(full[c.name])) for c in self.controls)

    def render(self, **setting: Any) -> tuple[bytes, str]:
        """The PNG bytes and alt text of the figure for one setting."""
        full = {**self.start(), **setting}
        with matplotlib.style.context("default"), matplotlib.rc_context(cast(Any, STYLE)):
            fig = Figure(figsize=self.size, layout="constrained")
            FigureCanvasAgg(fig)
            alt = self.draw(fig, **full)
            if not isinstance(alt, str) or not alt.strip():
                raise ValueError(f"explorer {self.name!r}: draw must return the figure's alt text")
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png")
        return _compact_png(buffer.getvalue()), alt

    # ------------------------------------------------------------------ static HTML

    def to_html(self) -> str:
        """The self-contained static explorer: controls, every state, the swap script."""
        start_key = self.key()
        states = {}
        for key, setting in self.settings():
            png, alt = self.render(**setting)
            states[key] = {"png": base64.b64encode(png).decode("ascii"), "alt": alt}
        start_index = dict(zip((c.name for c in self.controls), map(int, start_key.split("-"))))
        rows = [self._control_html(c, start_index[c.name]) for c in self.controls]
        first = states[start_key]
        payload = json.dumps(states, separators=(",", ":")).replace("</", "<\\/")
        label = html.escape(self.label)
        return (
            f'<div class="explorer" id="explorer-{self.name}" data-explorer="{self.name}" '
            f'role="group" aria-label="{label}">'
            f'<div class="explorer-controls" style="display:flex;flex-wrap:wrap;gap:0.5em 2em;'
            f'align-items:center;margin-bottom:0.5em">{"".join(rows)}</div>'
            f'<img class="explorer-figure" style="max-width:100%;height:auto" '
            f'src="data:image/png;base64,{first["png"]}" '
            f'alt="{html.escape(first["alt"])}" data-state="{start_key}">'
            f'<p class="explorer-status" role="status" aria-live="polite" style="{_HIDDEN}">'
            f"{html.escape(first['alt'])}</p>"
            f'<script type="application/json" class="explorer-states">{payload}</script>'
            f"<script>{_SCRIPT}</script></div>"
        )

    def _control_html(self, c: Control, index: int) -> str:
        ident = f"explorer-{self.name}-{c.name}"
        label = html.escape(c.label)
        if isinstance(c, Toggle):
            checked = " checked" if index else ""
            return (
                f'<span class="explorer-control"><input type="checkbox" id="{ident}" '
                f'data-control="{c.name}"{checked}> <label for="{ident}">{label}</label></span>'
            )
        labels = c.labels()
        if isinstance(c, Slider):
            return (
                f'<span class="explorer-control"><label for="{ident}">{label}</label> '
                f'<input type="range" id="{ident}" data-control="{c.name}" min="0" '
                f'max="{len(labels) - 1}" step="1" value="{index}" '
                f'aria-valuetext="{html.escape(labels[index])}" '
                f"data-labels='{html.escape(json.dumps(labels), quote=True)}'> "
                f'<output for="{ident}">{html.escape(labels[index])}</output></span>'
            )
        options = "".join(
            f"<option{' selected' if i == index else ''}>{html.escape(text)}</option>" for i, text in enumerate(labels)
        )
        return (
            f'<span class="explorer-control"><label for="{ident}">{label}</label> '
            f'<select id="{ident}" data-control="{c.name}">{options}</select></span>'
        )

    # ------------------------------------------------------------------ live widgets

    def widget(self) -> Any:
        """The live version: ipywidgets controls that redraw with ``draw``."""
        import ipywidgets as widgets

        start = self.start()
        inputs: dict[str, Any] = {}
        for c in self.controls:
            if isinstance(c, Toggle):
                inputs[c.name] = widgets.Checkbox(value=bool(start[c.name]), description=c.label)
            else:
                options = list(zip(c.labels(), c.options()))
                kind = widgets.SelectionSlider if isinstance(c, Slider) else widgets.Dropdown
                inputs[c.name] = kind(options=options, value=start[c.name], description=c.label)
        png, alt = self.render(**start)
        image = widgets.Image(value=png, format="png")
        status = widgets.HTML(html.escape(alt))

        def redraw(_change: Any = None) -> None:
            png, alt = self.render(**{n: w.value for n, w in inputs.items()})
            image.value, status.value = png, html.escape(alt)

        for w in inputs.values():
            w.observe(redraw, names="value")
        return widgets.VBox([widgets.HBox(list(inputs.values())), image, status])

    # ------------------------------------------------------------------ display

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        text = f"Explorer {self.name!r} ({', '.join(c.name for c in self.controls)})"
        if os.environ.get(MODE_VARIABLE, "auto") != "static":
            try:
                live = self.widget()
            except ImportError:
                pass
            else:
                bundle = live._repr_mimebundle_()
                return {**bundle, "text/plain": text}
        return {"text/html": self.to_html(), "text/plain": text}
