"""The instructor page: token kept for the session; adding and listing cases."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import Server
from tests.web.helpers import axe_violations, instructor_token, shot

pytestmark = pytest.mark.timeout(180)


def test_token_is_kept_for_the_browser_session(page: Page) -> None:
    page.goto("/instructor")
    page.get_by_label("Instructor token").fill("not-a-real-token")
    page.get_by_role("button", name="Use token").click()
    expect(page.locator("#token-status")).to_have_text("Token kept for this browser session.")
    # The field is cleared (the token is not left on screen) but kept in sessionStorage.
    expect(page.get_by_label("Instructor token")).to_have_value("")
    page.reload()
    expect(page.locator("#token-status")).to_have_text("Token kept for this browser session.")
    page.get_by_role("button", name="Forget token").click()
    assert page.evaluate("sessionStorage.getItem('tj:instructor-token')") is None
    shot(page, "instructor-page")


def test_instructor_adds_a_case_and_sees_it_listed(
    page: Page, server: Server, tmp_path: Path
) -> None:
    token = instructor_token(server, "admin")
    page.goto("/instructor")
    page.get_by_label("Instructor token").fill(token)
    page.get_by_role("button", name="Use token").click()
    # The first problem in the list is selected on load; this test is about multi-head attention.
    page.locator("#problem-select").select_option("multi-head-attention")
    expect(page.locator("#cases-status")).to_contain_text("case")

    page.get_by_label("Name").fill("web-added-case")
    page.get_by_label("Visibility").select_option("hidden")
    page.get_by_role("button", name="Fill with the first public example").click()
    expect(page.locator("#case-json")).not_to_have_value("")
    page.get_by_role("button", name="Add case").click()
    expect(page.locator("#add-status")).to_contain_text("Added web-added-case")
    row = page.locator('#cases-table tr[data-case="web-added-case"]')
    expect(row).to_be_visible()
    expect(row).to_contain_text("hidden")

    # The same inputs as an .npz upload, one array per parameter.
    example = httpx.get(f"{server.url}/api/problems/multi-head-attention").json()["examples"][0]
    npz = tmp_path / "case.npz"
    arrays = {
        k: np.asarray(v, dtype=np.int64 if k == "num_heads" else np.float64)
        for k, v in example["inputs"].items()
    }
    np.savez(npz, **arrays)
    page.get_by_label("Name").fill("web-npz-case")
    page.get_by_label("an .npz file").check()
    page.get_by_label(".npz file with one array per input").set_input_files(str(npz))
    page.get_by_role("button", name="Add case").click()
    expect(page.locator("#add-status")).to_contain_text("Added web-npz-case")
    expect(page.locator('#cases-table tr[data-case="web-npz-case"]')).to_be_visible()

    # The reports: the diagnosability table names every fault; the stats show their figures.
    page.get_by_role("button", name="Compute report").click()
    faults = page.locator("#diag-report table tbody tr")
    expect(faults.first).to_be_visible(timeout=120_000)
    assert faults.count() >= 10
    expect(page.locator("#diag-report table")).to_contain_text("missing-wo")
    page.get_by_label("Window").select_option("0")
    page.get_by_role("button", name="Load statistics").click()
    expect(page.locator("#stats-body dl.facts")).to_contain_text("Submissions")
    shot(page, "instructor-case-added", full_page=True)
    assert axe_violations(page) == []

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete case web-added-case").click()
    expect(row).to_have_count(0)
