"""axe-core on every page of the built book: no serious or critical violation.

axe-core (pinned in ``_ext/package-lock.json``, installed by ``npm ci``) is
injected into each settled page from the local file; nothing is fetched. Its
WCAG 2.x A/AA and best-practice rules run over the whole page: contrast,
names of controls (quizzes, cards, explorers), landmarks, keyboard access.
Serious and critical violations fail the test; moderate and minor ones are
listed in ``_build/reports/axe.json`` and in pytest's closing summary.
"""

from __future__ import annotations

import pytest
from browser import book_pages, describe_axe, record_axe, run_axe

PAGES = book_pages() or ["index.html"]
FAILING = ("serious", "critical")


@pytest.mark.parametrize("path", PAGES)
def test_no_serious_or_critical_axe_violation(open_page, path):
    page, _ = open_page(path)
    violations = run_axe(page)
    record_axe(path, "light", violations)
    failing = [v for v in violations if v["impact"] in FAILING]
    assert not failing, f"{path}: axe-core finds\n{describe_axe(failing)}"
