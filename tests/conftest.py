from hypothesis import HealthCheck, settings

settings.register_profile("course", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("course")

# Browser tests (tests/test_browser_*.py): fixtures and their closing summary live in tests/browser.py.
from browser import (  # noqa: E402,F401
    book_browser,
    browser_context,
    file_context,
    open_page,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_testnodedown,
    site_server,
)

# How the suite is split: the `browser`, `cluster` and `matrix` marks, --matrix, and the order files start in.
from suite_groups import (  # noqa: E402,F401
    environment_assignments,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
)
