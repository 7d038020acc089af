"""The instructor page's submissions list: filters, a regrade button per row, "regrade all
matching" behind a confirmation, and the page using the whole width at 1400 px."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.support.api import wait_done
from tests.support.codes import CORRECT, WRONG
from tests.web.conftest import browsing, serving
from tests.web.helpers import axe_violations, instructor_token, shot

pytestmark = pytest.mark.timeout(300)
PROBLEM = "multi-head-attention"


def graded(url: str, code: str) -> str:
    created = httpx.post(f"{url}/api/problems/{PROBLEM}/submissions", json={"code": code})
    assert created.status_code == 202, created.text
    return str(wait_done(url, created.json()["id"])["id"])


def rows(page: Page) -> list[str]:
    return page.locator("#subs-table tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.submission)"
    )


def test_instructor_filters_regrades_one_and_all_matching(browser: object, tmp_path: Path):
    with serving(tmp_path) as server, browsing(browser, server.url) as page:
        assert isinstance(page, Page)
        correct = graded(server.url, CORRECT)
        wrong = [graded(server.url, WRONG) for _ in range(2)]
        page.set_viewport_size({"width": 1400, "height": 900})
        page.goto("/instructor")
        page.get_by_label("Instructor token").fill(instructor_token(server))
        page.get_by_role("button", name="Use token").click()

        page.get_by_role("button", name="Show submissions").click()
        expect(page.locator("#subs-status")).to_have_text("3 submissions, newest first.")
        assert rows(page) == [*reversed(wrong), correct]
        # The page uses the width it has: the panel spans the main column, not half of it.
        panel = page.locator("section:has(#subs-heading)").bounding_box()
        assert panel is not None and panel["width"] > 1300, panel
        table = page.locator("#subs-table").bounding_box()
        assert table is not None and table["width"] <= panel["width"]
        shot(page, "instructor-submissions-1400", full_page=True)

        page.get_by_label("Verdict").select_option("accepted")
        page.get_by_role("button", name="Show submissions").click()
        expect(page.locator("#subs-status")).to_have_text("1 submission, newest first.")
        assert rows(page) == [correct]

        page.get_by_label("Verdict").select_option("")
        page.get_by_label("Diagnosis code").fill("missing-wo")
        page.get_by_role("button", name="Show submissions").click()
        expect(page.locator("#subs-status")).to_have_text("2 submissions, newest first.")
        assert sorted(rows(page)) == sorted(wrong)
        expect(page.locator(f'tr[data-submission="{wrong[0]}"]')).to_contain_text("missing-wo")

        asked: list[str] = []

        def answer(dialog: Dialog) -> None:
            asked.append(dialog.message)
            dialog.accept()

        page.once("dialog", answer)
        page.get_by_role("button", name="Regrade all matching…").click()
        expect(page.locator("#subs-status")).to_have_text("2 matched: 2 queued, 0 skipped.")
        assert asked and asked[0].startswith("Regrade all 2 matching submissions")
        for submission_id in wrong:
            wait_done(server.url, submission_id)

        page.get_by_role("button", name="Show submissions").click()
        row = page.locator(f'tr[data-submission="{wrong[1]}"]')
        expect(row.locator("td").nth(6)).to_have_text("2")  # its run: regraded once
        row.get_by_role("button", name=f"Regrade submission {wrong[1]}").click()
        expect(page.locator("#subs-status")).to_contain_text("queued for grading again (run 3)")
        wait_done(server.url, wrong[1])
        assert axe_violations(page) == []
