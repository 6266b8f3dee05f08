"""How soon Python answers in the site's in-browser Jupyter (JupyterLite + Pyodide).

Serves the built site (``_build/html``, with ``lite/``) on 127.0.0.1 and opens a
chapter notebook in headless Chromium, offline (every other host is blocked),
in a fresh browser profile each run (no HTTP cache: a first visit). Per run it
records, from the moment the page is asked for:

- ``kernel_ready_s``: the kernel is idle and the notebook is shown;
- ``first_cell_done_s``: the first code cell, run as a reader would
  (Shift+Enter on it), has finished;
- ``first_output_s``: the first output a reader sees: the cells are run one by
  one from the top until one shows an output other than stderr.

It also notes whether any of those cells wrote to stderr (the pink box JupyterLab
shows for it), and a timeline of the visit (``timeline``: when the kernel's
worker started, when each wasm, zip and wheel had arrived, when the kernel was
ready and each cell done). With ``--second-visit`` each run then opens the
notebook again in the same profile, with the HTTP cache and the compiled
WebAssembly the first visit left, and records the same three times under
``second_visit`` (a returning reader; the first-visit figures are the
headline). In that mode requests are watched rather than routed (routing turns
Playwright's HTTP cache off), so the first visit, too, may reuse within itself
what it has already fetched, as a browser does. Run from the repository root after ``./course build``::

    .venv/bin/python benchmarks/jupyterlite_first_output.py [--notebook chapters/01_self_attention.ipynb] [--runs 3]

With ``--baseline OTHER_SITE`` (another built site, e.g. one built from main)
the runs alternate between the two sites, so that both see the same load on a
shared machine, and both sets of runs and medians are written. ``--baseline``
may be given more than once, as ``NAME=OTHER_SITE`` (e.g. a site with one
change undone each): the runs go round all of them, and each one's runs and
medians are written under its name (``NAME_runs``, ``NAME_median``). ``--note TEXT``
says what the sites are and how loaded the machine was (the benchmark page
shows it).

It prints each run and the medians, and writes
``benchmarks/results/jupyterlite_first_output.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the browser tests' server and Chromium settings

from browser import CHROMIUM_FLAGS, KERNEL_IDLE_JS, PANEL, VIEWPORT, SiteServer, find_chromium  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "jupyterlite_first_output.json"
CODE_CELLS_JS = f"""() => {PANEL}.content.model.sharedModel.cells
  .map((c, i) => c.cell_type === 'code' ? i : -1).filter((i) => i >= 0)"""
RUN_CELL_JS = f"""(i) => {{
  {PANEL}.content.activeCellIndex = i;
  window.jupyterapp.commands.execute('notebook:run-cell');
}}"""
# The cell's state once it has run: its outputs (name for streams, type otherwise).
CELL_DONE_JS = f"""(i) => {{
  const p = {PANEL};
  const c = p.content.model.sharedModel.cells[i];
  const k = p.sessionContext.session.kernel;
  if (!c.execution_count || k.status !== 'idle') return null;
  return c.getOutputs().map((o) => o.output_type === 'stream' ? o.name : o.output_type);
}}"""
LIMIT_MS = 600_000  # a hung page, not a speed limit


def visit(context: Any, server: SiteServer, notebook: str) -> dict[str, Any]:
    """Open the notebook in a new page of ``context`` and time the kernel and the first output."""
    timeline: list[tuple[float, str]] = []
    page = context.new_page()
    started = time.monotonic()

    def mark(event: str) -> None:
        timeline.append((round(time.monotonic() - started, 2), event))

    def finished(request: Any) -> None:
        name = request.url.rsplit("/", 1)[-1].split("?")[0]
        if name.endswith((".whl", ".wasm", ".zip")):
            mark(f"fetched {name}")

    page.on("worker", lambda worker: mark("kernel worker started"))
    page.on("requestfinished", finished)
    page.goto(server.url(f"lite/notebooks/index.html?path={notebook}"), wait_until="commit")
    page.wait_for_function(KERNEL_IDLE_JS, timeout=LIMIT_MS, polling=50)
    ready = time.monotonic() - started
    mark("kernel ready")
    first_done = first_output = None
    stderr_cells = []
    for index in page.evaluate(CODE_CELLS_JS):
        page.evaluate(RUN_CELL_JS, index)
        handle = page.wait_for_function(CELL_DONE_JS, arg=index, timeout=LIMIT_MS, polling=50)
        outputs = handle.json_value()
        now = time.monotonic() - started
        mark(f"cell {index} done")
        if first_done is None:
            first_done = now
        if "stderr" in outputs:
            stderr_cells.append(index)
        if any(kind != "stderr" for kind in outputs):
            first_output = now
            break
    page.close()
    return {
        "kernel_ready_s": round(ready, 2),
        "first_cell_done_s": round(first_done or 0.0, 2),
        "first_output_s": round(first_output, 2) if first_output is not None else None,
        "cells_with_stderr": stderr_cells,
        "timeline": timeline,
    }


def one_run(browser: Any, server: SiteServer, notebook: str, second_visit: bool) -> dict[str, Any]:
    """A first visit in a fresh profile, then (``second_visit``) the same notebook
    opened again in that profile, with what the first visit left in its caches."""
    context = browser.new_context(viewport=VIEWPORT)
    blocked: list[str] = []

    def local(url: str) -> bool:
        return url.startswith(server.origin + "/") or url.startswith(("data:", "blob:"))

    def route(r: Any) -> None:
        if local(r.request.url):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort("blockedbyclient")

    if second_visit:
        # Playwright turns the HTTP cache off in a context that routes requests,
        # which would leave a second visit nothing to reuse: requests are only
        # watched here, and Chromium's resolver rules (CHROMIUM_FLAGS) let none
        # leave this machine.
        context.on("request", lambda r: None if local(r.url) else blocked.append(r.url))
    else:
        context.route("**/*", route)
    run = visit(context, server, notebook)
    if second_visit:
        again = visit(context, server, notebook)
        run["second_visit"] = {key: again[key] for key in ("kernel_ready_s", "first_cell_done_s", "first_output_s")}
    context.close()
    if blocked:
        raise SystemExit(f"the page asked for hosts other than the test server: {blocked[:5]}")
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook", default="chapters/01_self_attention.ipynb", help="path inside lite/files/")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--site", type=Path, default=REPO / "_build" / "html")
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="[NAME=]SITE",
        help="another built site, measured in alternation with --site (repeatable, each NAME=SITE)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON results")
    parser.add_argument("--note", default="", help="what the sites are, for the benchmark page")
    parser.add_argument(
        "--second-visit",
        action="store_true",
        help="after each first visit, open the notebook again in the same profile (warm caches)",
    )
    args = parser.parse_args(argv)
    sites = {"site": args.site}
    for given in args.baseline:
        name, _, path = given.rpartition("=")
        name = name or "baseline"
        if name in sites:
            parser.error(f"--baseline {given}: the name {name!r} is given twice")
        sites[name] = Path(path)
    for site in sites.values():
        if not (site / "lite" / "files" / args.notebook).is_file():
            parser.error(f"{site}/lite/files/{args.notebook} does not exist: run ./course build first")
    chromium = find_chromium(shell=False)  # the browser a learner runs, not the tests' headless shell
    if chromium is None:
        parser.error("Chromium not found ($COURSE_CHROMIUM, or chromium on PATH)")
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sites}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        for i in range(args.runs):
            for name, site in sites.items():
                with SiteServer(site) as server:
                    run = one_run(browser, server, args.notebook, args.second_visit)
                run["load_average_1min"] = round(os.getloadavg()[0], 2)
                shown = {key: value for key, value in run.items() if key != "timeline"}
                print(f"{name} run {i + 1}: {shown}", flush=True)
                runs[name].append(run)
        browser.close()
    result: dict[str, Any] = {
        "note": args.note,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "notebook": args.notebook,
    }
    for name, found in runs.items():
        medians = {
            key: statistics.median(r[key] for r in found if r[key] is not None)
            for key in ("kernel_ready_s", "first_cell_done_s", "first_output_s")
            if any(r[key] is not None for r in found)
        }
        prefix = "" if name == "site" else f"{name}_"
        result[f"{prefix}runs"] = found
        result[f"{prefix}median"] = medians
        if args.second_visit:
            result[f"{prefix}second_visit_median"] = {
                key: statistics.median(r["second_visit"][key] for r in found if r["second_visit"][key] is not None)
                for key in ("kernel_ready_s", "first_cell_done_s", "first_output_s")
                if any(r["second_visit"][key] is not None for r in found)
            }
            print(f"{name} second-visit median:", result[f"{prefix}second_visit_median"])
        print(f"{name} median:", medians)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
