"""The causal-attention page in a real browser: statement with math, the statement's worked example
among the public examples, and a wrong alignment of the mask diagnosed by name."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import PROBLEMS_DIR
from tests.web.helpers import (
    axe_violations,
    open_problem,
    rendered_statement,
    set_code,
    shot,
    wait_for_verdict,
)

pytestmark = pytest.mark.timeout(180)

PROBLEM = "causal-attention"
CORPUS = Path(__file__).parents[1] / "problems" / "corpus" / PROBLEM
FAULTS = tomllib.loads((PROBLEMS_DIR / PROBLEM / "faults.toml").read_text())["faults"]


def test_statement_renders_its_math_and_examples(page: Page) -> None:
    open_problem(page, PROBLEM)
    expect(
        page.get_by_role("heading", level=1, name="Causal attention with a KV cache")
    ).to_be_visible()
    statement = rendered_statement(page, 10)
    for requirement in ("block-future", "align-to-cache", "scale-scores", "softmax-keys"):
        expect(statement.locator(f'li[data-requirement="{requirement}"]')).to_be_visible()
    example = page.locator("details.example", has_text="zero-scores-cache")
    example.locator("summary").click()
    expect(example).to_contain_text("25")
    expect(example).to_contain_text("30")
    shot(page, "causal-attention-statement", full_page=True)


def test_upper_left_alignment_is_diagnosed_on_the_page(page: Page) -> None:
    open_problem(page, PROBLEM)
    set_code(page, (CORPUS / "upper_left_tril.py").read_text())
    page.get_by_role("button", name="Submit").click()
    wait_for_verdict(page, "wrong_answer")
    result = page.locator("#result")
    card = result.locator('article.diagnosis[data-code="upper-left-alignment"]')
    expect(card).to_be_visible()
    expect(card.locator("h4")).to_have_text(FAULTS["upper-left-alignment"]["title"])
    expect(result.locator('li[data-requirement="align-to-cache"]')).to_have_attribute(
        "data-status", "failed"
    )
    expect(result.locator('li[data-requirement="block-future"]')).to_have_attribute(
        "data-status", "passed"
    )
    # Plain self-attention (n_q == n_k) cannot show the alignment: that example passes.
    expect(result.locator('tr[data-case="self-attention"]')).to_contain_text("passed")
    result.scroll_into_view_if_needed()
    shot(page, "causal-attention-result", full_page=True)
    assert axe_violations(page) == []
