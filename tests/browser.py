"""The built book in a real browser: fixtures for the ``test_browser_*`` tests.

The book in ``_build/html`` is served by a small HTTP server on 127.0.0.1 (a
free port picked at random) and opened in headless Chromium, driven by
Playwright: Debian's ``chromium-headless-shell`` package, Chromium's own build
for headless use (the same engine without the browser's windows, so a fifth
less CPU for the same pages), or else its ``chromium`` package. Playwright's
own browser download is never used: we pass the system binary. Every request to
any other address is blocked by Chromium's host resolver, which maps every host
name (and every address) but 127.0.0.1 to "not found"; every request for
another origin is named in the page's log and the closing summary. Routing the
requests through Playwright as well would cost a round trip to Python for each
one. A control page that asks for outside URLs proves, once per browser, that
they are blocked and named (``BookBrowser.prove_outside_is_blocked``).

On a machine without Chromium the browser tests skip, and the end of pytest's
report says so in a banner; in CI (``$CI`` set), where ``.ci/run`` installs
Chromium, they fail instead.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
from built_book import HTML, ROOT, built_page
from suite_groups import cover, matrix_only

SCREENSHOTS = ROOT / "_build" / "screenshots"

# Folders of the built site that hold assets, not pages (lite/ is the in-browser
# Jupyter, tested by test_browser_jupyterlite.py).
NOT_PAGES = ("_static", "_sources", "_images", "_downloads", "lite")

# The headless shell first (see above); the benchmarks time the full browser.
SHELL_CANDIDATES = ("chromium-headless-shell",)
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Nothing but the test server can be reached, whatever the page asks for.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
VIEWPORT = {"width": 1280, "height": 900}

# JupyterLite's notebook panel, and the moment its kernel is idle with the notebook
# loaded: the browser tests and the first-output benchmark wait for the same thing.
PANEL = "window.jupyterapp.shell.currentWidget"
KERNEL_IDLE_JS = f"""() => {{
  const p = window.jupyterapp && {PANEL};
  const k = p && p.sessionContext && p.sessionContext.session && p.sessionContext.session.kernel;
  return !!(k && k.status === 'idle' && p.content && p.content.model);
}}"""
# A phone held upright (the CSS width of a common phone).
PHONE = {"width": 390, "height": 844}

# The control page: served by the test server itself (not a file of the book),
# it asks for two outside URLs, a host name and an address, both reserved for
# documentation (RFC 2606, RFC 5737) and so never anyone's real server.
CONTROL_PATH = "__outside_control__.html"
CONTROL_OUTSIDE = ("http://example.com/control.png", "http://192.0.2.1/control.png")
CONTROL_HTML = "<!doctype html><title>control</title>" + "".join(
    f'<img alt="control" src="{url}">' for url in CONTROL_OUTSIDE
)

# How long any wait in a page may take before it fails (Playwright's own default is 30 s,
# and 5 s for its assertions): a limit for a machine far busier than the tests expect.
WAIT_LIMIT_MS = 180_000

# Tracks the page's short timers (setTimeout of at most a second), so that

# SETTLE_JS can wait until the scripts that typeset or lay out after a delay
# (the quiz and flashcard scripts wait 500 ms for MathJax) have run, instead of
# sleeping for a fixed time. Longer timers (a review due later) are not waited for.
SHORT_TIMERS_JS = """
(() => {
  const set = window.setTimeout.bind(window), clear = window.clearTimeout.bind(window);
  const pending = new Set();
  window.__courseSleep = (ms) => new Promise((resolve) => set(resolve, ms));
  window.__courseShortTimers = () => pending.size;
  window.setTimeout = function (fn, ms, ...args) {
    if (typeof fn !== 'function' || Number(ms) > 1000) return set(fn, ms, ...args);
    const id = set((...a) => { pending.delete(id); return fn.apply(window, a); }, ms, ...args);
    pending.add(id);
    return id;
  };
  window.clearTimeout = function (id) { pending.delete(id); return clear(id); };
})();
"""

# What the browser tests did, for the closing summary (see pytest_terminal_summary).
SESSION: dict[str, Any] = {"skip_reason": None, "pages_opened": set(), "blocked": [], "renderers_killed": []}


def find_chromium(shell: bool = True) -> str | None:
    """The Chromium binary: $COURSE_CHROMIUM, else Debian's headless shell (unless
    ``shell`` is false: the browser a reader runs), else its chromium, on PATH."""
    explicit = os.environ.get("COURSE_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    for name in (SHELL_CANDIDATES if shell else ()) + CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def book_pages() -> list[str]:
    """Every HTML page of the built book, relative to the site root, sorted."""
    if not HTML.is_dir():
        return []
    return sorted(
        p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html") if p.relative_to(HTML).parts[0] not in NOT_PAGES
    )


# --------------------------------------------------------------------------- the cover

# What a browser test proves on one page it proves for every page whose content is of the
# same kinds: the same scripts run on the same markup, under the same style sheets. The
# kinds of a page are read from its built HTML (its article, where pages differ; the
# theme's frame around it is the same on every page): each block element's tag, and tag
# with each of its classes (an explorer, a flashcard, a glossary, a warning box, a
# definition list...), and for each script in the article its type, the functions it
# defines (a quiz, the cards) and the kinds of question it carries (a numeric answer is
# typed, a choice is clicked). Inline elements (links, spans, code) only style text.
INLINE = frozenset(
    "a abbr b bdi bdo br cite code data dfn em i kbd mark q s samp small span strong sub sup time u var wbr".split()
)
SCRIPT_FUNCTION = re.compile(r"\bfunction\s+([A-Za-z_$][\w$]*)")
QUESTION_TYPE = re.compile(r'"type"\s*:\s*"(\w+)"')


class _Kinds(HTMLParser):
    """Reads a page once: the kinds of content in its article, its main and its body (see
    INLINE above), and how many elements it has."""

    REGIONS = {"article": "bd-article", "main": None, "body": None}

    def __init__(self) -> None:
        super().__init__()
        self.kinds: dict[str, set[str]] = {region: set() for region in self.REGIONS}
        self.depth = dict.fromkeys(self.REGIONS, 0)
        self.elements = 0
        self.script: str | None = None
        # How many divs deep the parser is inside a cell's output (0: not in one).
        self.output_divs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements += 1
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag in self.REGIONS and (self.depth[tag] or self.REGIONS[tag] in (None, *classes)):
            self.depth[tag] += 1
        inside = [region for region, depth in self.depth.items() if depth]
        in_output = self.output_divs > 0
        if tag == "div" and (in_output or "cell_output" in classes):
            self.output_divs += 1
        if tag == "script":
            self.script = ""
            found = {f"script {attributes.get('type') or 'text/javascript'}"}
        elif tag in INLINE:
            return
        else:
            found = {tag, *(f"{tag}.{c}" for c in classes)}
        # The theme styles a cell's output apart (in dark mode, a light panel for pictures):
        # an element there is a kind of its own.
        found |= {f"output {kind}" for kind in found} if in_output else set()
        for region in inside:
            self.kinds[region] |= found

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in self.REGIONS and self.depth[tag]:
            self.depth[tag] -= 1

    def handle_data(self, data: str) -> None:
        if self.script is not None:
            self.script += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.output_divs:
            self.output_divs -= 1
        if tag == "script" and self.script is not None:
            found = {f"script function {name}" for name in SCRIPT_FUNCTION.findall(self.script)}
            found |= {f"script question {kind}" for kind in QUESTION_TYPE.findall(self.script)}
            for region, depth in self.depth.items():
                if depth:
                    self.kinds[region] |= found
            self.script = None
        if tag in self.REGIONS and self.depth[tag]:
            self.depth[tag] -= 1


@functools.cache
def _read_kinds(relative: str) -> tuple[frozenset[str], int]:
    parser = _Kinds()
    parser.feed(built_page(relative))
    own = next((k for k in parser.kinds.values() if k), set())
    return frozenset(own), parser.elements


def page_kinds(relative: str) -> frozenset[str]:
    """The kinds of content a built page holds in its own part (the theme's article, else its
    main, else its body; the frame around it is the theme's, the same on every page)."""
    return _read_kinds(relative)[0]


def page_weight(relative: str) -> int:
    """What a page costs a browser test, roughly: its elements (layout, axe-core and MathJax grow with them)."""
    return _read_kinds(relative)[1]


def pages_by_cover(pages: list[str]) -> list[Any]:
    """``pages`` as parameters: a cover of their kinds of content (:func:`suite_groups.cover`,
    each page weighed by its elements) in the default run, every other page only with
    ``./course test --matrix``."""
    chosen = set(cover({p: page_kinds(p) for p in pages}, {p: page_weight(p) for p in pages}))
    return [p if p in chosen else matrix_only(p, id=p) for p in pages]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        if self.path == f"/{CONTROL_PATH}":
            body = CONTROL_HTML.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A test that closes its page while a file is still on its way (a wheel
        # of the in-browser Python) hangs up on the server: not an error.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class SiteServer:
    """Serves the built book on 127.0.0.1 at a random free port, in a thread."""

    def __init__(self, root: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = _Server(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.root = root
        self.origin = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> SiteServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def url(self, path: str) -> str:
        return f"{self.origin}/{path.lstrip('/')}"

    def file_for(self, url: str) -> Path | None:
        """The file a URL of this server names, or None for another origin."""
        return site_file(self.origin, self.root, url)


def site_file(origin: str, root: Path, url: str) -> Path | None:
    """The file under ``root`` that a URL of a server at ``origin`` serving it names, or None
    for another origin (a folder names its index.html)."""
    parts = urlsplit(url)
    if f"{parts.scheme}://{parts.netloc}" != origin:
        return None
    path = unquote(parts.path).lstrip("/")
    target = root / path
    if path == "" or target.is_dir():
        target = target / "index.html"
    return target


@dataclass
class PageLog:
    """Everything that went wrong while a page loaded and was used."""

    path: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    bad_responses: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return (
            [f"console error: {m}" for m in self.console_errors]
            + [f"uncaught script error: {m}" for m in self.page_errors]
            + [f"failed request: {m}" for m in self.failed_requests]
            + [f"HTTP error: {m}" for m in self.bad_responses]
            + [f"request outside the test server (blocked): {m}" for m in self.blocked]
        )


# Waits for a frame drawn, or 1 s if the page draws none (so a wait for it
# always ends). The 1 s timer is cleared with the frame: the timer tracker
# (SHORT_TIMERS_JS) would count it as one of the page's own short timers, and
# the next wait for those would wait for it too.
FRAME_JS = """
  const frame = () => new Promise((r) => {
    const late = setTimeout(r, 1000);
    requestAnimationFrame(() => { clearTimeout(late); r(); });
  });
"""

# Resolves once the page has settled: MathJax has typeset the page, the quiz and
# flashcard scripts have run their delayed typesetting (500 ms timers: every
# short timer the page set has fired, see SHORT_TIMERS_JS), the page has been
# scrolled through once, a frame drawn at each screen, and the widget manager
# has rendered every saved widget view, and its images and fonts have arrived.
# A page opened without the timer tracker (a context not made by BookBrowser)
# waits 700 ms for the timers.
SETTLE_JS = (
    """
async () => {
  const sleep = window.__courseSleep || ((ms) => new Promise((r) => setTimeout(r, ms)));
"""
    + FRAME_JS
    + """  const typeset = async () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      await MathJax.startup.promise;
    }
  };
  const timers = async () => {
    if (!window.__courseShortTimers) return sleep(700);
    // A page that keeps setting short timers forever is given 3 s.
    for (let i = 0; i < 300 && window.__courseShortTimers() > 0; i++) await sleep(10);
  };
  const stage = (what) => { window.__courseSettling = what; };
  stage('MathJax');
  await typeset();
  stage('the short timers');
  await timers();
  stage('the scroll through the page');
  // Scroll through the page as a reader would: lazy images load, and everything
  // is laid out on screen once (fonts, for one, load when text needs them).
  for (let y = 0; y < document.body.scrollHeight; y += window.innerHeight) {
    window.scrollTo(0, y);
    await frame();
  }
  window.scrollTo(0, 0);
  await frame();
  const views = document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]').length;
  stage('the widgets');
  for (let i = 0; i < 500 && document.querySelectorAll('.widget-subarea').length < views; i++) {
    await sleep(20);
  }
  await timers();
  await typeset();
  // Every image has arrived (or failed) and every font in use has loaded: the
  // page's own resources, waited for by name. A wait for an idle network would
  // never end on a page that keeps a request open, and proves nothing more.
  // A lazy image the scroll passed too fast to start (a busy machine draws few
  // frames) would never load: each one still missing is asked for now.
  stage('the images');
  await Promise.all([...document.images].filter((img) => !img.complete).map((img) => {
    const arrived = new Promise((r) => { img.addEventListener('load', r); img.addEventListener('error', r); });
    img.loading = 'eager';
    return arrived;
  }));
  stage('the fonts');
  await document.fonts.ready;
  return true;
}
"""
)

# Starts SETTLE_JS once, on the first poll of wait_until_settled()'s wait, then reads how it went:
# true once settled, an error's text if it failed, undefined while it runs.
SETTLE_POLL_JS = f"""
() => {{
  if (window.__courseSettled === undefined) {{
    window.__courseSettled = null;
    ({SETTLE_JS.strip()})().then(
      () => {{ window.__courseSettled = true; }},
      (e) => {{ window.__courseSettled = String(e); }});
  }}
  return window.__courseSettled;
}}
"""


class RendererStuck(AssertionError):
    """A page's renderer stopped answering (Chromium's fault, not the page's: it runs no script at all)."""


@contextlib.contextmanager
def renderers_killed_after(seconds: float, browser_pid: int) -> Iterator[list[int]]:
    """Kill the renderers of the Chromium ``browser_pid`` if the block has not ended in ``seconds``;
    yields the list of the processes killed (empty unless it came to that).

    Playwright's limits do not bound a renderer that has stopped: its driver waits for
    the renderer's answer to each step, so a wait with a 3 s limit on a page whose script
    never ends never returns. A killed renderer makes the waiting step fail at once (the
    page crashed), and the page can be opened again.
    """
    import psutil

    killed: list[int] = []

    def kill() -> None:
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(browser_pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if "--type=renderer" in child.cmdline():
                        child.kill()
                        killed.append(child.pid)

    timer = threading.Timer(seconds, kill)
    timer.daemon = True
    timer.start()
    try:
        yield killed
    finally:
        timer.cancel()


def wait_until_settled(page: Any, browser_pid: int) -> None:
    """Wait until ``page`` has settled (SETTLE_JS), at most WAIT_LIMIT_MS.

    The limit is kept by Playwright, outside the page: a timer in the page would
    never fire in a renderer that has stopped running its scripts, and
    ``page.evaluate`` has no limit of its own (so the stage is read with one too).
    A renderer that does not answer Playwright either is killed half a minute later
    (``browser_pid`` is the Chromium the page is in).
    """
    with renderers_killed_after(WAIT_LIMIT_MS / 1000 + 30, browser_pid) as killed:
        try:
            # Polled on animation frames: Playwright's polling at an interval sets its
            # timer with the page's setTimeout, which the short-timer tracker counts as
            # one of the page's own, so every wait for those ran to its 3 s cap.
            outcome = page.wait_for_function(SETTLE_POLL_JS, polling="raf", timeout=WAIT_LIMIT_MS).json_value()
        except Exception as error:
            stuck = RendererStuck(f"{page.url}: the renderer stopped answering while the page settled")
            if killed:
                SESSION["renderers_killed"].append(page.url)
                raise stuck from error
            try:
                stage = page.wait_for_function("() => window.__courseSettling", timeout=5000).json_value()
            except Exception:
                raise stuck from error
            raise AssertionError(
                f"{page.url} did not settle in {WAIT_LIMIT_MS // 1000} s: it was at {stage}"
            ) from error
    assert outcome is True, f"{page.url} failed while settling: {outcome}"


# Resolves after two frames have been drawn (whatever a scroll or resize
# handler changed is on screen) and every finite animation or transition
# running then has ended.
DRAWN_JS = (
    """
async () => {
"""
    + FRAME_JS
    + """  await frame();
  await frame();
  const ending = document.getAnimations()
    .filter((a) => a.effect && a.effect.getComputedTiming().endTime !== Infinity);
  // A paused animation never finishes: wait at most 3 s, as SETTLE_JS does for timers.
  const cap = new Promise((r) => setTimeout(r, 3000));
  await Promise.race([Promise.all(ending.map((a) => a.finished.catch(() => null))), cap]);
  return true;
}
"""
)


# Text on screen that still holds TeX (\sqrt, \frac): math MathJax did not typeset.
# Code, scripts and MathJax's own output are left out, and so is text that is not
# rendered (display: none), such as the print-only parts of a page on screen.
RAW_TEX_JS = r"""
() => {
  const skip = 'pre, code, script, style, textarea, noscript, mjx-container, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      const parent = node.parentElement;
      if (!parent || parent.closest(skip) || parent.getClientRects().length === 0) {
        return NodeFilter.FILTER_REJECT;
      }
      return /\\(sqrt|frac)/.test(node.data) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
    },
  });
  const found = [];
  while (walker.nextNode()) found.push(walker.currentNode.data.trim().slice(0, 120));
  return found;
}
"""


# The contrast (WCAG) of an element's text with its own background, or null when
# the background is not opaque (the text then sits on whatever is behind it).
TEXT_CONTRAST_JS = """
(el) => {
  const channels = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = (c) => {
    const [r, g, b] = channels(c).slice(0, 3).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const style = getComputedStyle(el);
  const back = channels(style.backgroundColor);
  if (back.length > 3 && back[3] < 1) return null;
  const [light, dark] = [lum(style.color), lum(style.backgroundColor)].sort((a, b) => b - a);
  return (light + 0.05) / (dark + 0.05);
}
"""


# --------------------------------------------------------------------------- dark mode

# Figures the checks look at: images in cell outputs and explorers, in view.
BACKDROP_FIGURES_JS = """
() => [...document.querySelectorAll('.bd-content .cell_output img, .bd-content .explorer img')]
  .filter((img) => img.getClientRects().length > 0 && img.naturalWidth > 0)
  .map((img, i) => { img.dataset.darkCheck = String(i); return i; })
"""


# The luminance of the first opaque background behind the first quiz question.
QUIZ_PANEL_JS = """
() => {
  for (let e = document.querySelector('.Quiz').parentElement; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
    if (c.length === 3 || c[3] === 1) {
      const [r, g, b] = c.slice(0, 3).map((v) => {
        v /= 255;
        return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    }
  }
  return 0;
}
"""


def luminance(pixel: tuple[int, ...]) -> float:
    """Relative luminance (WCAG) of an sRGB pixel, 0 (black) to 1 (white)."""
    channels = []
    for value in pixel[:3]:
        c = value / 255
        channels.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def corner_luminance(png: bytes) -> float:
    """The darkest of the four corner pixels (just inside the element's border)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    w, h = image.size
    inset = 3
    corners = [(inset, inset), (w - 1 - inset, inset), (inset, h - 1 - inset), (w - 1 - inset, h - 1 - inset)]
    return min(luminance(image.getpixel(c)) for c in corners)


def switch_to_dark(page: Any) -> None:
    """Switch a light page to dark with the theme's own button, as a reader does, and wait until
    the page shows it: the colour transitions the switch started have ended, and the button is
    left as on a page opened dark (not hovered, its tooltip gone, not focused)."""
    page.locator(".theme-switch-button").first.click()
    page.mouse.move(0, VIEWPORT["height"] - 1)
    page.wait_for_function("() => !document.querySelector('.tooltip')")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    # Chromium runs no frame of a transition on an element off screen (a copy button far down
    # the page), so DRAWN_JS would wait out its limit: end them all at their last colours.
    page.evaluate("() => document.getAnimations().forEach((a) => a instanceof CSSTransition && a.finish())")
    page.evaluate(DRAWN_JS)


def typed_answer_contrast(page: Any) -> tuple[float | None, float | None]:
    """The contrast of a typed answer in the page's first numeric quiz question:
    while it is typed, and once Enter has marked it (right or wrong)."""
    field = page.locator(".Quiz input.Input-text").first
    field.scroll_into_view_if_needed()
    field.click()
    field.press_sequentially("7")
    typing = field.evaluate(TEXT_CONTRAST_JS)
    field.press("Enter")
    # The mark fades in (a CSS animation): read the colours it ends with.
    page.wait_for_function(
        "(el) => el.getAnimations().length > 0 && el.getAnimations().every((a) => a.playState === 'finished')",
        arg=field.element_handle(),
    )
    return typing, field.evaluate(TEXT_CONTRAST_JS)


class BookBrowser:
    """One Chromium for the session; each test opens pages in a fresh context.

    Playwright's sync API may be started only once per process, so every
    BookBrowser of a process (the book's, the hub test's) launches its Chromium
    from one shared Playwright, stopped when the last of them closes.
    """

    _playwright: Any = None
    _open_browsers = 0

    def __init__(self, executable: str, server: SiteServer) -> None:
        self.server = server
        playwright = BookBrowser._start_playwright()
        try:
            self.browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        except Exception:
            BookBrowser._release_playwright()
            raise
        self.version = self.browser.version
        # Chromium's own process id, for a watchdog that kills its stopped renderers.
        processes = self.browser.new_browser_cdp_session().send("SystemInfo.getProcessInfo")["processInfo"]
        self.pid: int = next(p["id"] for p in processes if p["type"] == "browser")
        self.current: PageLog | None = None  # the page being opened or used

    @classmethod
    def _start_playwright(cls) -> Any:
        if cls._playwright is None:
            from playwright.sync_api import expect, sync_playwright

            expect.set_options(timeout=WAIT_LIMIT_MS)

            cls._playwright = sync_playwright().start()
        cls._open_browsers += 1
        return cls._playwright

    @classmethod
    def _release_playwright(cls) -> None:
        cls._open_browsers -= 1
        if cls._open_browsers == 0 and cls._playwright is not None:
            cls._playwright.stop()
            cls._playwright = None

    def close(self) -> None:
        try:
            self.browser.close()
        finally:
            BookBrowser._release_playwright()

    def new_context(self, **options: Any) -> Any:
        """A fresh browser context in which only the test server can be reached
        (at the desktop VIEWPORT unless ``viewport=`` says otherwise); every
        request for anything else is named in SESSION and the current PageLog."""
        options.setdefault("viewport", VIEWPORT)
        context = self.browser.new_context(**options)
        # Every wait ends on its condition; the limit only stops a page that never gets
        # there, so it is generous: a busy machine takes longer, it does not fail.
        context.set_default_timeout(WAIT_LIMIT_MS)
        context.add_init_script(SHORT_TIMERS_JS)
        context.on("request", lambda r: self._note(r.url))
        return context

    def stays_home(self, url: str) -> bool:
        return url.startswith((self.server.origin + "/", "data:", "blob:"))

    def _note(self, url: str) -> None:
        if self.stays_home(url):
            return
        if self.current is not None:
            self.current.blocked.append(url)
        if self.current is None or self.current.path != CONTROL_PATH:
            SESSION["blocked"].append(url)

    def prove_outside_is_blocked(self) -> list[str]:
        """Open the control page, which asks for outside URLs: what went wrong
        (an outside request not named, or not refused by the host resolver)."""
        context = self.new_context()
        try:
            page = context.new_page()
            log = PageLog(CONTROL_PATH)
            self.current = log
            refused: dict[str, str | None] = {}
            page.on("requestfailed", lambda r: refused.__setitem__(r.url, r.failure))
            page.goto(self.server.url(CONTROL_PATH), wait_until="load")
        finally:
            self.current = None
            context.close()
        problems = [f"{url} was not named as blocked" for url in CONTROL_OUTSIDE if url not in log.blocked]
        problems += [
            f"{url} was not refused by Chromium's host resolver ({refused.get(url)})"
            for url in CONTROL_OUTSIDE
            if refused.get(url) != "net::ERR_NAME_NOT_RESOLVED"
        ]
        return problems

    def open(self, context: Any, path: str, retried: bool = False) -> tuple[Any, PageLog]:
        """Open a page of the book, wait until it has settled, and log its errors
        (in a new page once more if its renderer stopped answering)."""
        page = context.new_page()
        log = PageLog(path)
        self.current = log
        page.on(
            "console",
            lambda m: (
                log.console_errors.append(f"{m.text} ({m.location.get('url', '')})") if m.type == "error" else None
            ),
        )
        page.on("pageerror", lambda e: log.page_errors.append(str(e)))
        page.on(
            "requestfailed",
            lambda r: None if r.url in log.blocked else log.failed_requests.append(f"{r.url}: {r.failure}"),
        )
        page.on(
            "response",
            lambda r: log.bad_responses.append(f"{r.status} {r.url}") if r.status >= 400 else None,
        )
        url = self.server.url(path)
        page.goto(url, wait_until="load")
        if is_redirect(self.server.file_for(url)):  # index.html: go on to its target
            page.wait_for_url(lambda now: now != url, wait_until="load")
        try:
            wait_until_settled(page, self.pid)
        except RendererStuck:
            if retried:
                raise
            page.close()
            return self.open(context, path, retried=True)
        SESSION["pages_opened"].add(path)
        return page, log


# --------------------------------------------------------------------------- axe-core

# axe-core, pinned in _ext/package-lock.json and installed by `npm ci`; only the
# tests load it (injected from the file: nothing is fetched).
AXE = ROOT / "_ext" / "node_modules" / "axe-core" / "axe.min.js"

# Runs axe-core's WCAG 2.x A/AA and best-practice rules (or the rules named).
RUN_AXE_JS = """
async (rules) => {
  const only = rules ? {type: 'rule', values: rules}
    : {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']};
  const result = await axe.run(document, {runOnly: only, resultTypes: ['violations']});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({target: n.target.join(' '), summary: n.failureSummary})),
  }));
}
"""


def run_axe(page: Any, rules: list[str] | None = None) -> list[dict]:
    """axe-core's violations on the page as it is now: [{id, impact, help, nodes}]."""
    if not AXE.is_file():
        pytest.fail(f"{AXE.relative_to(ROOT)} is missing: run ./course build (npm ci in _ext/) first")
    if not page.evaluate("() => Boolean(window.axe)"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    return page.evaluate(RUN_AXE_JS, rules)


AXE_REPORT = ROOT / "_build" / "reports" / "axe.json"


def record_axe(path: str, theme: str, violations: list[dict]) -> None:
    """Keep a page's violations for _build/reports/axe.json and the closing summary."""
    SESSION.setdefault("axe", {})[f"{path} ({theme})"] = violations


def axe_counts(report: dict[str, list[dict]]) -> dict[str, int]:
    """Violating elements per impact ("critical", "serious", ...) over every page checked."""
    counts: dict[str, int] = {}
    for found in report.values():
        for v in found:
            counts[v["impact"]] = counts.get(v["impact"], 0) + len(v["nodes"])
    return counts


def describe_axe(violations: list[dict]) -> str:
    """One line per offending element (at most five per rule)."""
    return "\n".join(
        f"  {v['impact']}: {v['id']} ({v['help']}) at {n['target']}: {n['summary']}"
        for v in violations
        for n in v["nodes"][:5]
    )


def is_redirect(page: Path | None) -> bool:
    """True for a page that only sends the browser on (a meta refresh)."""
    if page is None or not page.is_file():
        return False
    head = page.read_text(encoding="utf-8", errors="replace")[:1000].lower()
    return 'http-equiv="refresh"' in head


class _Anchors(HTMLParser):
    """Collects the id and name attributes of one HTML file (link targets)."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.anchors.add(value)


@functools.cache
def anchors_of(path: Path) -> frozenset[str]:
    parser = _Anchors()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.anchors)


def broken_internal_links(
    file_for: Callable[[str], Path | None], page_url: str, page_ids: set[str], urls: list[str]
) -> list[str]:
    """Internal URLs (links and image sources) that lead nowhere.

    ``file_for`` names the file of the site a URL leads to, or None for a URL
    outside the site. Such a file must exist, and a #fragment must name an id on
    the target page: ``page_ids`` for links within the page (a live page's, as
    scripts may add ids), the built file for links to other pages.
    """
    broken = []
    for url in sorted(set(urls)):
        target = file_for(url)
        if target is None:
            continue
        base, fragment = urldefrag(url)
        if not target.is_file():
            broken.append(f"{url} (no such file)")
            continue
        if not fragment:
            continue
        fragment = unquote(fragment)
        same_page = urldefrag(page_url)[0].split("?")[0] == base.split("?")[0]
        ids = page_ids if same_page else anchors_of(target)
        if target.suffix == ".html" and fragment not in ids:
            broken.append(f"{url} (no element with id {fragment!r})")
    return broken


def heading_problems(headings: list[dict]) -> list[str]:
    """The article starts with its one h1, and no heading goes down more than one level."""
    if not headings:
        return ["the page has no heading"]
    problems = []
    if headings[0]["level"] != 1:
        problems.append(f"first heading is h{headings[0]['level']} ({headings[0]['text']!r}), not h1")
    h1s = [h["text"] for h in headings if h["level"] == 1]
    if len(h1s) > 1:
        problems.append(f"{len(h1s)} h1 headings: {h1s}")
    for before, after in zip(headings, headings[1:]):
        if after["level"] > before["level"] + 1:
            problems.append(
                f"h{before['level']} {before['text']!r} is followed by h{after['level']} "
                f"{after['text']!r} (skips a level)"
            )
    return problems


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def site_server() -> Iterator[SiteServer]:
    if not (HTML / "index.html").is_file():
        pytest.fail(
            "_build/html/index.html does not exist: build the book first (`./course test` builds it, then runs pytest)."
        )
    with SiteServer(HTML) as server:
        yield server


@contextlib.contextmanager
def chromium_for(server: Any) -> Iterator[BookBrowser]:
    """A :class:`BookBrowser` that can reach ``server`` alone (anything with an ``origin`` and a ``url()``); the
    tests that need it skip without Chromium, and fail in CI, where it must be there."""
    executable = find_chromium()
    reason = None
    if executable is None:
        reason = (
            "Chromium not found (looked for $COURSE_CHROMIUM, then 'chromium-headless-shell' and "
            "'chromium' on PATH); install Debian's package: apt-get install -y chromium-headless-shell"
        )
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the Python package playwright is not installed (run ./course test)"
    if reason and os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the browser tests: .ci/run installs Chromium)")
    if reason:
        SESSION["skip_reason"] = reason
        pytest.skip(f"BROWSER TESTS SKIPPED: {reason}")
    assert executable is not None
    browser = BookBrowser(executable, server)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="session")
def book_browser(site_server: SiteServer) -> Iterator[BookBrowser]:
    with chromium_for(site_server) as browser:
        problems = browser.prove_outside_is_blocked()
        if problems:
            pytest.fail("the browser tests' network is not closed: " + "; ".join(problems))
        yield browser


@pytest.fixture
def browser_context(book_browser: BookBrowser) -> Iterator[Any]:
    context = book_browser.new_context()
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def open_page(book_browser: BookBrowser, browser_context: Any):
    """open_page("chapters/x.html") -> (playwright page, PageLog), settled."""

    def _open(path: str) -> tuple[Any, PageLog]:
        return book_browser.open(browser_context, path)

    return _open


@pytest.fixture
def file_context(book_browser: BookBrowser) -> Iterator[Any]:
    """A browser context for the site opened from files (file://): every request
    that is not a file of the site is blocked and listed in ``context.blocked``."""
    context = book_browser.browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(WAIT_LIMIT_MS)
    blocked: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith(HTML.as_uri() + "/") or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort("blockedbyclient")

    context.route("**/*", route)
    context.blocked = blocked
    try:
        yield context
    finally:
        context.close()


# --------------------------------------------------------------------------- report


# With pytest-xdist the browser tests run in worker processes: each worker hands
# its SESSION to the controller (xdist's workeroutput), which merges them, so the
# summary and the axe report cover every worker.


def _shareable(session: dict[str, Any]) -> dict[str, Any]:
    return {**session, "pages_opened": sorted(session["pages_opened"])}


def merge_session(other: dict[str, Any]) -> None:
    """Fold one worker's SESSION into this process's."""
    SESSION["skip_reason"] = SESSION["skip_reason"] or other.get("skip_reason")
    SESSION["pages_opened"].update(other.get("pages_opened", ()))
    SESSION["blocked"].extend(other.get("blocked", ()))
    SESSION["renderers_killed"].extend(other.get("renderers_killed", ()))
    for key in ("axe", "explorers"):
        if other.get(key):
            SESSION.setdefault(key, {}).update(other[key])


def pytest_sessionfinish(session: Any) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["browser_session"] = json.dumps(_shareable(SESSION))
    elif SESSION.get("axe"):
        AXE_REPORT.parent.mkdir(parents=True, exist_ok=True)
        AXE_REPORT.write_text(json.dumps(SESSION["axe"], indent=2, sort_keys=True) + "\n", encoding="utf-8")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    shared = getattr(node, "workeroutput", {}).get("browser_session")
    if shared:
        merge_session(json.loads(shared))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say loudly when the browser tests were skipped, and what they did otherwise."""
    reason = SESSION["skip_reason"]
    if reason:
        terminalreporter.write_sep("!", "BROWSER TESTS SKIPPED", red=True, bold=True)
        terminalreporter.write_line(f"The built book was NOT checked in a browser: {reason}.", red=True)
        terminalreporter.write_line(
            "(In CI, where .ci/run installs Chromium, a missing browser fails these tests.)", red=True
        )
        terminalreporter.write_sep("!", red=True, bold=True)
        return
    if SESSION.get("explorers"):
        terminalreporter.write_sep("-", "explorers (response time from input to the next frame, ms)")
        for name, seen in sorted(SESSION["explorers"].items()):
            times = seen["response_ms"]
            terminalreporter.write_line(
                f"{name}: {seen['explorer_bytes'] / 1024:.0f} KiB on a {seen['page_bytes'] / 1024:.0f} KiB page; "
                f"{len(times)} moves, median {times[len(times) // 2]:.0f} ms, slowest {times[-1]:.0f} ms"
            )
    if SESSION.get("axe"):
        counts = axe_counts(SESSION["axe"])
        terminalreporter.write_sep("-", "axe-core")
        terminalreporter.write_line(
            "violations (element count) on the pages checked: "
            + ", ".join(f"{impact} {counts.get(impact, 0)}" for impact in ("critical", "serious", "moderate", "minor"))
            + "; every one is listed in _build/reports/axe.json"
        )
    if SESSION["pages_opened"]:
        blocked = SESSION["blocked"]
        terminalreporter.write_sep("-", "browser tests")
        terminalreporter.write_line(
            f"{len(SESSION['pages_opened'])} pages opened in Chromium from 127.0.0.1; "
            f"{len(blocked)} requests outside the test server blocked"
            + (": " + ", ".join(sorted(set(blocked))[:10]) if blocked else "")
        )
        if SESSION["renderers_killed"]:
            terminalreporter.write_line(
                "renderers that stopped answering, killed and opened again: " + ", ".join(SESSION["renderers_killed"]),
                yellow=True,
            )
        shots = sorted(p.name for p in SCREENSHOTS.glob("*.png")) if SCREENSHOTS.is_dir() else []
        if shots:
            terminalreporter.write_line(f"screenshots in {SCREENSHOTS.relative_to(ROOT)}/: {', '.join(shots)}")
