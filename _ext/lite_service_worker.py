"""Let the site's static files reach the browser without passing through
JupyterLite's service worker.

JupyterLite's service worker answers the kernel's file requests (``/api/drive``,
``/api/stdin/``); every other request it fetches again itself and hands on
(``respondWith(fetch(request))``), or, with ``enableCache``, keeps in a cache.
With the cache off (the course never turns it on) that second fetch adds
nothing but a detour: every byte of the Pyodide runtime and of the wheels
(about 30 MB) is copied through the worker's thread, which took several seconds
of the time to a ready kernel. This edits the built ``service-worker.js`` so
that, with the cache off,

- the worker registers a route (the browser's static routing API,
  ``InstallEvent.addRoutes``) that sends every request outside ``/api/`` straight
  to the network, so those requests never wake the worker;
- its fetch handler leaves such requests to the browser (no ``respondWith``),
  for browsers without that API.

Requests under ``/api/`` are handled exactly as before, and so is everything
when the cache is on.
"""

from __future__ import annotations

from pathlib import Path

from lite_paths import LiteBuildError

# The text of jupyterlite-core 0.6's built service-worker.js that is edited:
# (what it says, what it says after the edit).
EDITS = (
    (
        "shouldDrop(t,a)||(n=maybeFromCache(e))",
        "shouldDrop(t,a)||!enableCache||(n=maybeFromCache(e))",
    ),
    (
        "function onInstall(e){self.skipWaiting(),e.waitUntil(cacheAll())}",
        "function onInstall(e){self.skipWaiting(),e.waitUntil(cacheAll()),"
        'e.addRoutes&&"undefined"!=typeof URLPattern&&'
        '"true"!==new URL(location.href).searchParams.get("enableCache")&&'
        'e.waitUntil(e.addRoutes([{condition:{not:{urlPattern:new URLPattern({pathname:"*/api/*"})}},'
        'source:"network"}]).catch((r=>console.warn("JupyterLite ServiceWorker: no static route",r))))}',
    ),
)


def route_static_files_past(output: Path) -> None:
    """Edit ``<output>/service-worker.js`` as the module says; a built worker that
    does not hold the expected text stops the build (a new JupyterLite)."""
    worker = output / "service-worker.js"
    if not worker.is_file():
        raise LiteBuildError(f"{worker} does not exist: JupyterLite built no service worker")
    text = worker.read_text(encoding="utf-8")
    for old, new in EDITS:
        if text.count(old) != 1:
            raise LiteBuildError(
                f"{worker} does not hold {old!r} once: a JupyterLite other than 0.6 built it; "
                "check _ext/lite_service_worker.py against it"
            )
        text = text.replace(old, new)
    worker.write_text(text, encoding="utf-8")
