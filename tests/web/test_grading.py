"""Grading from the page: real submissions through the real API, sandbox and grader."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.web.helpers import (
    CORRECT,
    MISSING_WO,
    UNMERGED,
    axe_violations,
    element_shot,
    open_problem,
    set_code,
    shot,
    wait_for_verdict,
)

pytestmark = pytest.mark.timeout(300)

ELAPSED = re.compile(r"^\d+\.\d s$")


def test_missing_wo_is_diagnosed_then_fixed(page: Page) -> None:
    open_problem(page)
    set_code(page, MISSING_WO)
    page.keyboard.press("Control+Enter")  # submits from inside the editor
    # Live progress: spinner and elapsed time while it is graded.
    progress = page.locator("#progress")
    expect(progress).to_be_visible()
    expect(page.locator("#elapsed")).to_have_text(ELAPSED)
    shot(page, "grading-in-progress")

    wait_for_verdict(page, "wrong_answer")
    result = page.locator("#result")
    expect(result.locator(".verdict-label")).to_have_text("Wrong answer")
    failed = result.locator('li[data-requirement="merge-and-project"]')
    expect(failed).to_have_attribute("data-status", "failed")
    for other in ("project-qkv", "split-heads", "scale-scores", "softmax-keys"):
        expect(result.locator(f'li[data-requirement="{other}"]')).to_have_attribute(
            "data-status", "passed"
        )
    card = result.locator('article.diagnosis[data-code="missing-wo"]')
    expect(card).to_be_visible()
    assert card.locator("h4").inner_text().strip()
    assert card.locator(".diag-explanation").inner_text().strip()
    assert "Hint" in card.locator(".diag-hint").inner_text()
    assert result.locator("table.tests tbody tr").count() >= 2
    result.scroll_into_view_if_needed()
    shot(page, "result-missing-wo")
    element_shot(result, "result-missing-wo-panel")
    assert axe_violations(page) == []

    set_code(page, CORRECT)
    # Keyboard only: focus the button, press Enter; focus stays there through grading.
    page.get_by_role("button", name="Submit").focus()
    page.keyboard.press("Enter")
    wait_for_verdict(page, "accepted")
    assert page.evaluate("document.activeElement.id") == "submit"
    expect(result.locator(".verdict-label")).to_have_text("Accepted")
    statuses = result.locator("ul.checklist li").evaluate_all(
        "items => items.map(li => li.dataset.status)"
    )
    assert statuses and set(statuses) == {"passed"}, statuses
    assert result.locator("article.diagnosis").count() == 0
    shot(page, "result-accepted")

    # Both are in this browser's history, newest first, and the older one reopens.
    history = page.locator(".history-list > li")
    expect(history).to_have_count(2)
    history.nth(1).get_by_role("button", name="Open").click()
    expect(page.locator("#verdict")).to_have_attribute("data-verdict", "wrong_answer")
    expect(page.locator('article.diagnosis[data-code="missing-wo"]')).to_be_visible()
    # History survives a reload.
    page.reload()
    expect(page.locator(".history-list > li")).to_have_count(2)


def test_run_examples_shows_public_cases_and_the_shape_picture(page: Page) -> None:
    open_problem(page)
    set_code(page, UNMERGED)
    page.get_by_role("button", name="Run examples").click()
    wait_for_verdict(page, "wrong_answer")
    rows = page.locator("table.tests tbody tr")
    assert rows.count() >= 1
    visibilities = page.locator("table.tests tbody tr td:nth-child(2)").all_inner_texts()
    assert set(visibilities) == {"public"}, visibilities
    figure = page.locator('figure[data-picture="shape"]')
    expect(figure).to_be_visible()
    expect(figure.locator("figcaption")).to_contain_text("Expected (")
    figure.scroll_into_view_if_needed()
    shot(page, "result-shape-picture")
