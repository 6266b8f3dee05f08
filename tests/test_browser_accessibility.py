"""axe-core on every page of the built book: no serious or critical violation.

axe-core (pinned in ``_ext/package-lock.json``, installed by ``npm ci``) is
injected into each settled page from the local file; nothing is fetched. Its
WCAG 2.x A/AA and best-practice rules run over the whole page: contrast,
names of controls (quizzes, cards, explorers), landmarks, keyboard access.
Serious and critical violations fail the test; moderate and minor ones are
listed in ``_build/reports/axe.json`` and in pytest's closing summary.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from browser import SESSION, book_pages
from built_book import ROOT

AXE = ROOT / "_ext" / "node_modules" / "axe-core" / "axe.min.js"
REPORT = ROOT / "_build" / "reports" / "axe.json"
PAGES = book_pages() or ["index.html"]
FAILING = ("serious", "critical")

RUN_AXE_JS = """
async () => {
  const result = await axe.run(document, {
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice']},
    resultTypes: ['violations'],
  });
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => ({target: n.target.join(' '), summary: n.failureSummary})),
  }));
}
"""


def axe_script() -> str:
    if not AXE.is_file():
        pytest.fail(f"{AXE.relative_to(ROOT)} is missing: run ./course build (npm ci in _ext/) first")
    return AXE.read_text(encoding="utf-8")


def run_axe(page: Any) -> list[dict]:
    """axe-core's violations on the page as it is now."""
    page.add_script_tag(content=axe_script())
    return page.evaluate(RUN_AXE_JS)


def record(path: str, theme: str, violations: list[dict]) -> None:
    """Keep every page's violations in the report file and the closing summary."""
    report = SESSION.setdefault("axe", {})
    report[f"{path} ({theme})"] = violations
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    counts = Counter()
    for found in report.values():
        for v in found:
            counts[v["impact"]] += len(v["nodes"])
    SESSION["axe_counts"] = dict(counts)


def describe(violations: list[dict]) -> str:
    return "\n".join(
        f"  {v['impact']}: {v['id']} ({v['help']}) at {n['target']}: {n['summary']}"
        for v in violations
        for n in v["nodes"][:5]
    )


@pytest.mark.parametrize("path", PAGES)
def test_no_serious_or_critical_axe_violation(open_page, path):
    page, _ = open_page(path)
    violations = run_axe(page)
    record(path, "light", violations)
    failing = [v for v in violations if v["impact"] in FAILING]
    assert not failing, f"{path}: axe-core finds\n{describe(failing)}"
