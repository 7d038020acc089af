"""The masked-attention page in a real browser: the statement's math rendered by KaTeX, the
examples with both outputs and the expected error, and a wrong corpus submission graded into a
diagnosis card named after its mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.web.helpers import (
    axe_violations,
    open_problem,
    rendered_statement,
    set_code,
    shot,
    wait_for_verdict,
)

pytestmark = pytest.mark.timeout(300)

PROBLEM = "masked-attention"
CORPUS = Path(__file__).parents[1] / "problems" / "corpus" / PROBLEM


def test_statement_renders_math_and_examples(page: Page) -> None:
    open_problem(page, PROBLEM)
    expect(page.get_by_role("heading", level=1, name="Masked attention")).to_be_visible()
    statement = rendered_statement(page, 10)
    expect(statement.locator('li[data-requirement="reject-empty-rows"]')).to_be_visible()
    example = statement.locator("details.example", has_text="first-key-only")
    example.locator("summary").click()
    expect(example.locator('pre[data-output="weights"]')).to_contain_text("shape (1, 2)")
    blocked = statement.locator("details.example", has_text="blocked-row")
    blocked.locator("summary").click()
    expect(blocked.locator(".raises")).to_have_text("raises ValueError")
    shot(page, "masked-attention-statement", full_page=True)


def test_zeroing_after_the_softmax_is_diagnosed(page: Page) -> None:
    open_problem(page, PROBLEM)
    set_code(page, (CORPUS / "mask_after_softmax.py").read_text())
    page.get_by_role("button", name="Submit").click()
    wait_for_verdict(page, "wrong_answer")
    result = page.locator("#result")
    card = result.locator('article.diagnosis[data-code="mask-after-softmax"]')
    expect(card).to_be_visible()
    expect(card.locator("h4")).to_have_text("Mask applied after the softmax")
    expect(result.locator('li[data-requirement="mask-before-softmax"]')).to_have_attribute(
        "data-status", "failed"
    )
    expect(result.locator('li[data-requirement="reject-empty-rows"]')).to_have_attribute(
        "data-status", "passed"
    )
    row = result.locator('tr[data-case="first-key-only"]')
    expect(row.locator('li[data-output="weights"]')).to_have_attribute("data-status", "failed")
    expect(result.locator('tr[data-case="blocked-row"]')).to_contain_text("must raise ValueError")
    shot(page, "masked-attention-result", full_page=True)
    assert axe_violations(page) == []
