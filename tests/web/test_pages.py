"""Student pages in a real browser: list, statement with math, editor, draft, keyboard, phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import Server
from tests.web.helpers import CORRECT, editor_text, open_problem, rendered_statement, set_code, shot

pytestmark = pytest.mark.timeout(180)


def test_problem_list_links_to_the_problem(page: Page) -> None:
    page.goto("/")
    card = page.locator(".problem-card", has_text="Multi-head attention")
    expect(card).to_be_visible()
    shot(page, "problem-list")
    card.get_by_role("link", name="Multi-head attention").click()
    expect(page).to_have_url(re.compile(r"/problems/multi-head-attention$"))
    expect(page.get_by_role("heading", level=1, name="Multi-head attention")).to_be_visible()


def test_statement_math_and_starter_code(page: Page) -> None:
    open_problem(page)
    # KaTeX rendered the $...$ math: formulas, not dollar signs, are on the page.
    statement = rendered_statement(page, 20)
    # Requirements and examples from the problem.
    expect(statement.locator('li[data-requirement="merge-and-project"]')).to_be_visible()
    assert statement.locator("details.example").count() >= 1
    # The editor: starter code, line numbers, Python highlighting.
    code = editor_text(page)
    assert "def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):" in code
    assert "raise NotImplementedError" in code
    expect(page.locator(".cm-lineNumbers .cm-gutterElement", has_text="1").first).to_be_visible()
    colours = page.evaluate(
        """() => {
            const base = getComputedStyle(document.querySelector('.cm-content')).color;
            const def = [...document.querySelectorAll('.cm-line span')]
                .find(s => s.textContent === 'def');
            return [base, def ? getComputedStyle(def).color : null];
        }"""
    )
    assert colours[1] is not None and colours[1] != colours[0], colours
    shot(page, "problem-loaded")
    shot(page, "problem-loaded-full", full_page=True)


def test_draft_survives_reload(page: Page) -> None:
    open_problem(page)
    set_code(page, CORRECT)
    expect(page.locator("#draft-status")).to_have_text("Draft saved")
    page.reload()
    page.locator(".cm-content").wait_for()
    assert editor_text(page).strip() == CORRECT.strip()
    # Reset asks first, then brings the starter code back.
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reset to starter code").click()
    assert "raise NotImplementedError" in editor_text(page)


def test_keyboard_only_use(page: Page) -> None:
    open_problem(page)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    # Into the editor: Tab indents there, Esc then Tab moves on to the buttons.
    page.locator(".cm-content").focus()
    page.keyboard.press("End")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('cm-content')")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "run-examples"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "submit"
    # The editor is labelled and described for screen readers.
    content = page.locator(".cm-content")
    expect(content).to_have_attribute("aria-labelledby", "editor-heading")
    expect(content).to_have_attribute("aria-describedby", "editor-help")


def test_phone_width_has_no_sideways_scroll(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    open_problem(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"page is {width}px wide at a 390px viewport"
    shot(page, "problem-phone")
    page.locator("#editor-heading").scroll_into_view_if_needed()
    shot(page, "problem-phone-editor")


def test_unknown_problem_says_so(page: Page, server: Server) -> None:
    response = page.goto("/problems/no-such-problem")
    assert response is not None and response.status == 404
    expect(page.get_by_role("alert")).to_contain_text("no-such-problem")
    expect(page.locator(".problem-card").first).to_be_visible()
