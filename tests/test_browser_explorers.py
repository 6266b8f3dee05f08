"""The explorers respond on the built static page: no kernel, no network.

Without a browser, for every explorer of the book: the built page holds a frame
for every setting; the first and the last are the ones the chapter's own
``draw`` function gives (byte for byte: the test runs the chapter's code cells
up to the explorer, with ``lib``, and renders those settings itself); and every
frame's alt text carries numbers that the test computes independently with
plain numpy.

In headless Chromium, for a cover of the explorers (each kind of control, at
each place, on one explorer: the page's script reads a control by both), every
control is moved twice: once from the keyboard and once by setting its value.
After each move the figure on the page must be the one lib draws for that
setting. The time from the key press or the input event to the next frame
after the image changed is recorded and reported (no timed assertion), and so
is each explorer's page weight. ``./course test --matrix`` moves every
explorer's controls.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import functools
import json
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from browser import DRAWN_JS, SESSION
from bs4 import BeautifulSoup
from built_book import HTML, ROOT
from suite_groups import cover, matrix_only

from sdpa_course.teaching.explorer import Explorer

REPORT = ROOT / "_build" / "reports" / "explorers.json"

# page of the built book -> chapter source.
PAGES = {
    "ch1-lookup": "chapters/01_self_attention",
    "ch3-blend": "chapters/03_queries_keys_values",
    "ch4-push": "chapters/04_scaled_dot_product_attention",
    "ch5-width": "chapters/05_why_divide_by_sqrt_dk",
    "ch5-stretch": "chapters/05_why_divide_by_sqrt_dk",
    "ch6-mask": "chapters/06_causal_masking",
    "ch7-head": "chapters/07_multi_head_preview",
    "ch8-steps": "chapters/08_online_softmax",
    "ch10-stretch": "chapters/10_attention_in_its_block",
}


# --------------------------------------------------------------------------- the chapters' explorers


def explorer_and_inputs(name: str) -> tuple[Explorer, dict[str, Any]]:
    """Explorer ``name`` and its chapter's namespace at the cell that shows it (its inputs:
    tokens, x, the projection matrices...), from one run of that chapter (:func:`chapter_explorers`)."""
    shown = chapter_explorers(PAGES[name])
    if name not in shown:
        pytest.fail(f"{PAGES[name]}.md displays no explorer named {name!r}")
    explorer, namespace, first_frame = shown[name]
    # A cell after the explorer may rebind a name its draw function reads; the build drew
    # every frame before that cell ran, so the frames drawn now must still be the same.
    if first_frame is not None:
        assert explorer.render() == first_frame, f"{name}: a later cell of its chapter changes what it draws"
    return explorer, namespace


@functools.cache
def chapter_explorers(chapter: str) -> dict[str, tuple[Explorer, dict[str, Any], tuple[bytes, str] | None]]:
    """Run a chapter's code cells, as the build does, up to the last cell that shows an explorer
    of :data:`PAGES`. Returns, for each explorer shown, the explorer, a copy of the chapter's
    namespace at that point, and (if more cells ran after it) its first frame drawn then
    (see :func:`explorer_and_inputs`)."""
    import jupytext
    import matplotlib

    matplotlib.use("Agg")
    source = ROOT / f"{chapter}.md"
    wanted = {name for name, page in PAGES.items() if page == chapter}
    namespace: dict[str, Any] = {"__name__": "__chapter__"}
    shown: dict[str, tuple[Explorer, dict[str, Any], tuple[bytes, str] | None]] = {}
    # np.printoptions() puts back the print settings the chapter changes, so that
    # later tests (lib's doctests) print as numpy does by default.
    with contextlib.chdir(source.parent), warnings.catch_warnings(), np.printoptions():
        warnings.filterwarnings("ignore", message=".*non-interactive.*")
        for cell in jupytext.read(source).cells:
            lines = cell.source.splitlines()
            if cell.cell_type != "code" or any(l.startswith(("show_quiz(", "show_cards(")) for l in lines):
                continue
            tree = ast.parse("\n".join(l for l in lines if not l.startswith(("%", "!"))))
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, str(source), "exec"), namespace)  # noqa: S102 - the chapter's own code
            if last is not None:
                value = eval(compile(ast.Expression(last.value), str(source), "eval"), namespace)  # noqa: S307
                if isinstance(value, Explorer) and value.name in wanted:
                    more = len(shown) + 1 < len(wanted)
                    shown[value.name] = (value, dict(namespace), value.render() if more else None)
                    if not more:
                        break
    return shown


# --------------------------------------------------------------------------- independent values


def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+\.\d+|-?\d+", text)]


def softmax(row: np.ndarray) -> np.ndarray:
    finite = np.isfinite(row)
    e = np.where(finite, np.exp(row - row[finite].max()), 0.0)
    return e / e.sum()


def near(shown: str, value: float, digits: int) -> bool:
    return abs(float(shown) - value) <= 0.6 * 10.0**-digits


def check_blend(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    t, x = setting["t"], ns["x"]
    w_q_t = (1 - t) * ns["w_k"] + t * ns["w_q"]
    e = (x @ w_q_t) @ (x @ ns["w_k"]).T
    gap = re.search(r"largest \|e_ij - e_ji\| = (\S+)\.$", alt).group(1)
    assert near(gap, np.abs(e - e.T).max(), 2), alt
    assert f"t = {t:.1f}" in alt and setting["view"] in alt


def check_lookup(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    names, prices = ("apple", "banana", "cherry", "date"), np.array([10.0, 20.0, 30.0, 40.0])
    asked = [n for n in names if n in setting["question"].split(" and ")]

    def lookup(sharpness: float) -> tuple[np.ndarray, float]:
        w = softmax(np.array([sharpness / len(asked) if n in asked else 0.0 for n in names]))
        return w, float(w @ prices)

    w, out = lookup(setting["sharpness"])
    assert np.allclose(numbers(alt.split(":", 1)[1].split(". Beside")[0]), w, atol=0.006), alt
    assert near(numbers(alt.split("the output,")[1])[0], out, 3), alt
    if len(asked) == 1:  # what the page says: sharper comes closer to the price asked for
        price = prices[names.index(asked[0])]
        assert abs(lookup(setting["sharpness"] + 1)[1] - price) < abs(out - price)


def check_push(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    q, k, v = ns["Q"], ns["K"], ns["V"]
    j = int(re.search(r"\(j=(\d)\)", setting["key"]).group(1))
    before = (q[2] @ k.T) / np.sqrt(k.shape[1])
    row = before.copy()
    row[j] += setting["change"]
    a, a0 = softmax(row), softmax(before)
    shown = numbers(alt.split(":", 1)[1].split(". Beside")[0])[-len(a) :]
    assert np.allclose(shown, a, atol=0.006), alt
    out = numbers(alt.split("is now")[1])
    assert np.allclose(out[:2], a @ v, atol=0.006) and np.allclose(out[2:4], a0 @ v, atol=0.006), alt
    # What the page says: the other keys lose weight by one factor, and the output stays on the line from
    # the others' average (which does not move) to v_j.
    others = [i for i in range(len(a)) if i != j]
    assert np.allclose(a[others] / a0[others], a[others[0]] / a0[others[0]])
    rest = (a0[others] @ v[others]) / a0[others].sum()
    assert np.allclose(a @ v, a[j] * v[j] + (1 - a[j]) * rest)


def check_width(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    d_k, scaled = setting["d_k"], setting["mode"] == "scaled"
    rng = np.random.default_rng([5, d_k])  # the chapter's draws for this width
    q, k = rng.standard_normal((1, d_k)), rng.standard_normal((16, d_k))
    many = np.einsum("nd,nd->n", rng.standard_normal((2000, d_k)), rng.standard_normal((2000, d_k)))
    factor = 1 / np.sqrt(d_k) if scaled else 1.0
    std, largest = re.search(r"standard deviation (\S+); .* is (\S+) \(", alt).groups()
    assert near(std, (many * factor).std(), 1), alt
    assert near(largest, softmax((q @ k.T)[0] * factor).max(), 2), alt


def check_stretch(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    rng = np.random.default_rng(64)
    s = (rng.standard_normal((1, 64)) @ rng.standard_normal((16, 64)).T)[0] / 8.0
    a = softmax(setting["c"] * s)
    jac = np.diag(a) - np.outer(a, a)
    largest, entropy, size = re.search(
        r"largest weight (\S+), entropy (\S+), Frobenius norm of the Jacobian (\S+)\.$", alt
    ).groups()
    assert near(largest, a.max(), 2), alt
    assert near(entropy, -(a[a > 0] * np.log(a[a > 0])).sum(), 2), alt
    assert near(size, np.sqrt((jac**2).sum()), 3), alt


def check_mask(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    q, k = ns["x"] @ ns["W_Q"], ns["x"] @ ns["W_K"]
    s = q @ k.T / np.sqrt(q.shape[1])
    if setting["causal"]:
        s = np.where(np.tri(len(s), dtype=bool), s, -np.inf)
    if setting["what"] == "weights":
        shown = numbers(alt.split("gives:")[1])
        assert np.allclose(shown, softmax(s[2]), atol=0.006), alt
    else:
        assert f"{int(np.isneginf(s).sum())} of 36 entries" in alt, alt


def check_head(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    head, d_k = setting["head"], ns["d_k"]
    cols = slice(head * d_k, (head + 1) * d_k)
    q, k = ns["x"] @ ns["W_Q"][:, cols], ns["x"] @ ns["W_K"][:, cols]
    s = q @ k.T / np.sqrt(d_k)
    if setting["causal"]:
        s = np.where(np.tri(len(s), dtype=bool), s, -np.inf)
    w = np.array([softmax(row) for row in s])
    tokens = ns["tokens"]
    pairs = re.findall(r"(\w+) reads (\w+) \((\d\.\d\d)\)", alt)
    assert len(pairs) == len(tokens), alt
    for i, (query, key, value) in enumerate(pairs):
        assert query == tokens[i] and near(value, w[i].max(), 2), alt
        assert w[i][[j for j, t in enumerate(tokens) if t == key]].max() == pytest.approx(w[i].max()), alt


def check_steps(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    q, k = ns["Q"], ns["K"]  # inputs of chapter 8's example (from lib.project_qkv)
    row = (q @ k.T / np.sqrt(q.shape[1]))[setting["query"]]
    seen = min(2 * setting["blocks"], len(row))
    m = row[:seen].max()
    total = np.exp(row[:seen] - m).sum()
    m_shown, l_shown = re.search(r"running max m = (\S+), running sum l = (\S+),", alt).groups()
    assert near(m_shown, m, 2) and near(l_shown, total, 3), alt
    so_far = numbers(alt.split("weights so far:")[1])
    assert np.allclose(so_far, np.exp(row[:seen] - m) / total, atol=0.006), alt


def check_stretch_stream(ns: dict[str, Any], setting: dict[str, Any], alt: str) -> None:
    x = setting["c"] * ns["x"]
    if setting["normalised"]:
        centred = x - x.mean(axis=1, keepdims=True)
        x = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5)
    w = ns["weights"]
    s = (x @ w.w_q[:, :4]) @ (x @ w.w_k[:, :4]).T / 2.0  # head 0: the first d_k = 4 columns
    largest = [softmax(row).max() for row in s]
    shown = numbers(alt.split("query:")[1])
    assert len(shown) == 6 and all(near(str(v), m, 2) for v, m in zip(shown, largest)), alt
    assert f"c = {setting['c']}." in alt


CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any], str], None]] = {
    "ch1-lookup": check_lookup,
    "ch3-blend": check_blend,
    "ch4-push": check_push,
    "ch5-width": check_width,
    "ch5-stretch": check_stretch,
    "ch6-mask": check_mask,
    "ch7-head": check_head,
    "ch8-steps": check_steps,
    "ch10-stretch": check_stretch_stream,
}


# --------------------------------------------------------------------------- in the browser

# Records, for the next change of the figure, the time from the start mark to
# the next frame painted after the image's src changed.
WATCH_JS = """
(box) => {
  const img = box.querySelector('img.explorer-figure');
  window.__explorerTimes = window.__explorerTimes || [];
  if (!box.__watched) {
    box.__watched = true;
    new MutationObserver(() => {
      const start = window.__explorerStart;
      if (start === undefined) return;
      window.__explorerStart = undefined;
      requestAnimationFrame(() => requestAnimationFrame(() =>
        window.__explorerTimes.push(performance.now() - start)));
    }).observe(img, {attributes: true, attributeFilter: ['src']});
    document.addEventListener('keydown', () => { window.__explorerStart = performance.now(); }, true);
  }
}
"""

SET_VALUE_JS = """
([box, name, index]) => {
  const input = box.querySelector(`[data-control="${name}"]`);
  window.__explorerStart = performance.now();
  if (input.type === 'checkbox') input.checked = Boolean(index);
  else if (input.type === 'range') input.value = String(index);
  else input.selectedIndex = index;
  input.dispatchEvent(new Event(input.type === 'range' ? 'input' : 'change', {bubbles: true}));
}
"""

SHOWN_JS = """
(box) => {
  const img = box.querySelector('img.explorer-figure');
  return {src: img.getAttribute('src'), alt: img.getAttribute('alt'), state: img.dataset.state,
          status: box.querySelector('[role=status]').textContent,
          values: [...box.querySelectorAll('[data-control]')].map((i) =>
            i.type === 'checkbox' ? (i.checked ? 1 : 0) : Number(i.type === 'range' ? i.value : i.selectedIndex)),
          bytes: box.outerHTML.length};
}
"""

TIMES: dict[str, list[float]] = {}


def record(name: str, times: list[float], weight: int, page_bytes: int) -> None:
    TIMES.setdefault(name, []).extend(times)
    SESSION.setdefault("explorers", {})[name] = {
        "explorer_bytes": weight,
        "page_bytes": page_bytes,
        "response_ms": sorted(round(t, 1) for t in TIMES[name]),
    }
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(SESSION["explorers"], indent=2) + "\n", encoding="utf-8")


@functools.cache
def frame_of(explorer: Explorer, key: str) -> tuple[bytes, str]:
    """The PNG and alt text lib draws for the setting with state ``key`` (each drawn once)."""
    return explorer.render(**dict(explorer.settings())[key])


def assert_shows(explorer: Explorer, ns: dict[str, Any], shown: dict[str, Any]) -> None:
    """The page shows the figure lib gives for the setting its controls hold."""
    setting = {c.name: c.options()[i] for c, i in zip(explorer.controls, shown["values"])}
    png, alt = frame_of(explorer, explorer.key(**setting))
    assert shown["state"] == explorer.key(**setting)
    assert shown["src"] == "data:image/png;base64," + base64.b64encode(png).decode("ascii"), (
        f"{explorer.name}: the image on the page is not the one drawn with lib for {setting}"
    )
    assert shown["alt"] == alt and shown["status"] == alt
    CHECKS[explorer.name](ns, setting, alt)


def page_states(name: str) -> dict[str, dict[str, str]]:
    """The frames the built page holds for explorer ``name``: state key -> its base64 PNG and alt text."""
    box = BeautifulSoup((HTML / f"{PAGES[name]}.html").read_text(encoding="utf-8"), "html.parser")
    return json.loads(box.select_one(f"#explorer-{name} script.explorer-states").string)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_page_holds_libs_frame_for_every_setting(name):
    explorer, ns = explorer_and_inputs(name)
    states = page_states(name)
    assert sorted(states) == sorted(k for k, _ in explorer.settings())
    last = "-".join(str(len(c.options()) - 1) for c in explorer.controls)
    for key in (explorer.key(), last):
        png, alt = frame_of(explorer, key)
        assert states[key] == {"png": base64.b64encode(png).decode("ascii"), "alt": alt}, (
            f"{name}: the page's frame for setting {key} is not the one drawn with lib"
        )
    for key, setting in explorer.settings():
        CHECKS[name](ns, setting, states[key]["alt"])


def control_kinds(name: str) -> frozenset[str]:
    """Explorer ``name``'s controls, each by its kind and its place (``range 0``, ``checkbox 1``),
    read from the built page (every explorer is its own kind when the page is not built)."""
    page = HTML / f"{PAGES[name]}.html"
    if not page.is_file():
        return frozenset({name})
    box = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select_one(f"#explorer-{name}")
    fields = box.select("[data-control]") if box else []
    return frozenset(f"{f.get('type') if f.name == 'input' else f.name} {i}" for i, f in enumerate(fields)) or {name}


# The explorers whose controls the default run moves in the browser: one of each kind at each place.
IN_THE_BROWSER = set(cover({name: control_kinds(name) for name in PAGES}))


@pytest.mark.parametrize("name", [n if n in IN_THE_BROWSER else matrix_only(n, id=n) for n in sorted(PAGES)])
def test_explorer_follows_every_control(open_page, name):
    explorer, ns = explorer_and_inputs(name)
    page, log = open_page(f"{PAGES[name]}.html")
    box = page.locator(f"#explorer-{name}")
    assert box.count() == 1, f"no explorer #{name} on {PAGES[name]}.html"
    handle = box.element_handle()
    page.evaluate(WATCH_JS, handle)
    shown = page.evaluate(SHOWN_JS, handle)
    assert shown["state"] == explorer.key(), "the explorer does not start at its declared setting"
    assert_shows(explorer, ns, shown)

    for position, control in enumerate(explorer.controls):
        count = len(control.options())
        # From the keyboard: Tab reaches the control; one key moves it one step.
        field = box.locator(f'[data-control="{control.name}"]')
        field.focus()
        before = page.evaluate(SHOWN_JS, handle)["values"][position]
        if control.__class__.__name__ == "Toggle":
            page.keyboard.press("Space")
            expected = 1 - before
        else:
            key = "ArrowRight" if control.__class__.__name__ == "Slider" else "ArrowDown"
            if before == count - 1:
                key = "ArrowLeft" if key == "ArrowRight" else "ArrowUp"
            page.keyboard.press(key)
            expected = before + (1 if key in ("ArrowRight", "ArrowDown") else -1)
        page.wait_for_function(
            "([b, p, v]) => Number(b.querySelector('img').dataset.state.split('-')[p]) === v",
            arg=[handle, position, expected],
        )
        assert_shows(explorer, ns, page.evaluate(SHOWN_JS, handle))
        # By setting the value: the last, then the first value.
        for index in (count - 1, 0):
            if page.evaluate(SHOWN_JS, handle)["values"][position] == index:
                continue
            page.evaluate(SET_VALUE_JS, [handle, control.name, index])
            shown = page.evaluate(SHOWN_JS, handle)
            assert shown["values"][position] == index
            assert_shows(explorer, ns, shown)
    page.evaluate(DRAWN_JS)  # the last frames painted and timed
    times = page.evaluate("window.__explorerTimes")
    assert times, "no change of the figure was seen"
    record(name, times, shown["bytes"], (HTML / f"{PAGES[name]}.html").stat().st_size)
    assert not log.problems(), "\n".join(log.problems())


def test_chapter_claims_about_stretching_hold():
    """Chapter 5's sentences after the stretch explorer, recomputed with numpy."""
    rng = np.random.default_rng(64)
    s = (rng.standard_normal((1, 64)) @ rng.standard_normal((16, 64)).T)[0] / 8.0
    stats = {}
    for c in (0.25, 0.5, 1, 2, 4, 8, 16, 32):
        a = softmax(c * s)
        stats[c] = (a.max(), -(a[a > 0] * np.log(a[a > 0])).sum(), np.linalg.norm(np.diag(a) - np.outer(a, a)))
    assert stats[1][0] < 0.5 and (softmax(s) > 0.05).sum() >= 3  # several keys share the weight
    assert round(stats[32][0], 2) == 1.00 and stats[32][1] < 0.05 and stats[32][2] < 0.01
    norms = [stats[c][2] for c in sorted(stats)]
    assert max(norms) > norms[0] and np.argmax(norms) not in (0, len(norms) - 1)  # grows, then collapses
