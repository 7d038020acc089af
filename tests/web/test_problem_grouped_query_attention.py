"""The grouped-query attention page in a real browser: the statement's math rendered by KaTeX,
the public examples, and a tiled-instead-of-repeated submission from the corpus diagnosed."""

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

pytestmark = pytest.mark.timeout(180)

PROBLEM = "grouped-query-attention"
CORPUS = Path(__file__).parents[1] / "problems" / "corpus" / PROBLEM


def test_statement_renders_and_a_tiled_submission_is_diagnosed(page: Page) -> None:
    open_problem(page, PROBLEM)
    expect(page.get_by_role("heading", level=1, name="Grouped-query attention")).to_be_visible()
    statement = rendered_statement(page, 20)
    expect(statement.locator('li[data-requirement="share-kv-heads"]')).to_be_visible()
    assert statement.locator("details.example").count() == 2
    shot(page, "problem-grouped-query-attention", full_page=True)

    set_code(page, (CORPUS / "kv_heads_interleaved_tile.py").read_text())
    page.get_by_role("button", name="Submit").click()
    wait_for_verdict(page, "wrong_answer")
    result = page.locator("#result")
    card = result.locator('article.diagnosis[data-code="kv-heads-interleaved"]')
    expect(card).to_be_visible()
    expect(card.locator("h4")).to_have_text("Key/value heads tiled instead of repeated")
    expect(result.locator('li[data-requirement="share-kv-heads"]')).to_have_attribute(
        "data-status", "failed"
    )
    for other in ("project", "split-heads", "scale-scores", "softmax-keys", "merge-and-project"):
        expect(result.locator(f'li[data-requirement="{other}"]')).to_have_attribute(
            "data-status", "passed"
        )
    # The multi-query and plain multi-head cases pass: tiling only shows with 1 < g < h.
    expect(result.locator('tr[data-case="multi-query"]')).to_have_class("case-passed")
    expect(result.locator('tr[data-case="four-heads-two-groups"]')).to_have_class("case-failed")
    result.scroll_into_view_if_needed()
    shot(page, "result-grouped-query-attention", full_page=True)
    assert axe_violations(page) == []
