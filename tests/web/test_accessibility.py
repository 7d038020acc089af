"""axe-core (WCAG 2.1 A and AA rules: labels, contrast, names, roles) on every page."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.web.helpers import axe_violations

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("path", ["/", "/problems/multi-head-attention", "/instructor"])
def test_no_wcag_violations(page: Page, path: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(path)
    page.locator("main h1").first.wait_for()
    if path.startswith("/problems/"):
        page.locator(".cm-content").wait_for()
    assert axe_violations(page) == []
