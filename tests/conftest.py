from hypothesis import HealthCheck, settings

settings.register_profile("course", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("course")

# Browser tests (tests/test_browser_*.py): fixtures and their closing summary live in tests/browser.py.
from browser import book_browser, browser_context, file_context, open_page, pytest_terminal_summary, site_server  # noqa: E402,F401
