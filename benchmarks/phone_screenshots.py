"""Screenshots of the book on a phone (390 px wide), in light and dark mode.

For a person to compare: the welcome page (its headline formula and its map of
the course), chapter 1 (its first figure) and chapter 4 (the four steps for
one query and the table of shapes), each as one screen of a phone, once in
each theme. The site is served on 127.0.0.1 and opened in headless Chromium
with every other host blocked, as the browser tests do (tests/browser.py).

    .venv/bin/python benchmarks/phone_screenshots.py OUT_DIR [--site _build/html]

It writes OUT_DIR/<page>-<spot>-<theme>.png (palette PNGs, a few tens of KiB
each), and <page>-<spot>-full-size-<theme>.png where a figure has a "Full size"
button (opened), and prints their names and sizes.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import PHONE, BookBrowser, SiteServer, find_chromium  # noqa: E402

# name -> (page, [(spot, CSS selector of the element to show at the top of the
# screen; "" for the top of the page)])
SPOTS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "welcome": ("chapters/00_welcome.html", [("top", ""), ("map", "article table")]),
    "ch1": ("chapters/01_self_attention.html", [("figure", "#fig-ch1-weights")]),
    "ch4": (
        "chapters/04_scaled_dot_product_attention.html",
        [("steps", "#the-four-steps-for-one-query .math"), ("shapes", "article table")],
    ),
}

# Scrolls the element to just below the theme's sticky header.
SCROLL_TO_JS = """
(selector) => {
  const element = document.querySelector(selector);
  if (!element) return false;
  const header = document.querySelector('.bd-header-article');
  const offset = header ? header.getBoundingClientRect().height : 0;
  window.scrollTo(0, element.getBoundingClientRect().top + window.scrollY - offset - 12);
  return true;
}
"""


def small_png(png: bytes) -> bytes:
    """The screenshot as a 128-colour palette PNG (text stays sharp, the file small)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path, help="folder for the PNGs (created if missing)")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built site")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        parser.error(f"{args.site} holds no built site (no index.html): run ./course build first")
    chromium = find_chromium()
    if chromium is None:
        parser.error("Chromium not found ($COURSE_CHROMIUM, or chromium on PATH)")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with SiteServer(args.site) as server:
        browser = BookBrowser(chromium, server)
        try:
            for theme in ("light", "dark"):
                context = browser.new_context(viewport=PHONE, color_scheme=theme)
                try:
                    for label, (path, spots) in SPOTS.items():
                        page, _ = browser.open(context, path)
                        for spot, selector in spots:
                            if selector and not page.evaluate(SCROLL_TO_JS, selector):
                                print(f"{path}: nothing matches {selector!r}", file=sys.stderr)
                                return 1
                            page.wait_for_timeout(300)
                            name = f"{label}-{spot}-{theme}.png"
                            data = small_png(page.screenshot())
                            (args.out_dir / name).write_bytes(data)
                            print(f"{name}: {len(data) / 1024:.0f} KiB")
                            # A figure with a "Full size" button: the figure opened, too.
                            button = page.locator(f"{selector} button.figure-zoom-button") if selector else None
                            if button is not None and button.count() and button.first.is_visible():
                                button.first.click()
                                page.wait_for_timeout(300)
                                data = small_png(page.screenshot())
                                (args.out_dir / f"{label}-{spot}-full-size-{theme}.png").write_bytes(data)
                                print(f"{label}-{spot}-full-size-{theme}.png: {len(data) / 1024:.0f} KiB")
                                page.keyboard.press("Escape")
                        page.close()
                finally:
                    context.close()
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
