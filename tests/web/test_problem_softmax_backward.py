"""The softmax-backward page in a real browser: the statement's math rendered by KaTeX, the
examples, and a wrong corpus submission diagnosed with its fault's title."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.core.config import REPO_ROOT
from tests.web.helpers import (
    axe_violations,
    open_problem,
    rendered_statement,
    set_code,
    shot,
    wait_for_verdict,
)

pytestmark = pytest.mark.timeout(180)

PROBLEM = "softmax-backward"
FOLDER = REPO_ROOT / "problems" / PROBLEM
WRONG = Path(__file__).parents[1] / "problems" / "corpus" / PROBLEM / "diagonal_only.py"


def test_statement_math_examples_and_a_diagnosed_result(page: Page) -> None:
    open_problem(page, PROBLEM)
    expect(page.get_by_role("heading", level=1, name="Softmax backward")).to_be_visible()
    statement = rendered_statement(page, 15)
    # Display math (the Jacobian and the result) is rendered as display blocks.
    assert statement.locator(".katex-display").count() >= 2
    for requirement in ("couple-positions", "weight-by-probabilities", "reduce-along-axis"):
        expect(statement.locator(f'li[data-requirement="{requirement}"]')).to_be_visible()
    assert statement.locator("details.example").count() >= 4
    shot(page, "softmax-backward-statement", full_page=True)

    set_code(page, WRONG.read_text())
    page.get_by_role("button", name="Submit").click()
    wait_for_verdict(page, "wrong_answer")
    result = page.locator("#result")
    title = tomllib.loads((FOLDER / "faults.toml").read_text())["faults"]["diagonal-only"]["title"]
    card = result.locator('article.diagnosis[data-code="diagonal-only"]')
    expect(card).to_be_visible()
    expect(card.locator("h4")).to_have_text(title)
    expect(result.locator('li[data-requirement="couple-positions"]')).to_have_attribute(
        "data-status", "failed"
    )
    expect(result.locator('li[data-requirement="reduce-along-axis"]')).to_have_attribute(
        "data-status", "passed"
    )
    result.scroll_into_view_if_needed()
    shot(page, "softmax-backward-result", full_page=True)
    assert axe_violations(page) == []
