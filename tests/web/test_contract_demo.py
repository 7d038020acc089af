"""The page on a problem with the general contract (tests/problems/fixtures/contract-demo, served
from GRADER_PROBLEM_DIRS): named outputs in the examples, a result and a heat map per output,
and the instructor form generated from the parameters (a boolean mask, None, an int)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.support.codes import CONTRACT_DEMO_CORRECT
from tests.web.conftest import Server
from tests.web.helpers import axe_violations, open_field_form, set_code, shot, wait_for_verdict

pytestmark = pytest.mark.timeout(300)


def test_examples_show_each_output_and_the_expected_error(fixtures_page: Page) -> None:
    page = fixtures_page
    page.goto("/problems/contract-demo")
    page.locator(".cm-content").wait_for()
    expect(page.locator("#problem-title")).to_have_text("Masked attention weights (contract demo)")
    page.get_by_text("masked", exact=True).click()
    masked = page.locator("details.example").first
    expect(masked.locator('pre[data-output="output"]')).to_contain_text("shape (3, 2)")
    expect(masked.locator('pre[data-output="weights"]')).to_contain_text("shape (3, 4)")
    blocked = page.locator("details.example", has_text="blocked-row")
    blocked.locator("summary").click()
    expect(blocked.locator(".raises")).to_have_text("raises ValueError")


def test_a_wrong_mask_shows_a_result_and_a_heat_map_per_output(fixtures_page: Page) -> None:
    page = fixtures_page
    page.goto("/problems/contract-demo")
    page.locator(".cm-content").wait_for()
    set_code(page, CONTRACT_DEMO_CORRECT.replace("np.where(mask, scores", "np.where(~mask, scores"))
    page.get_by_role("button", name="Submit").click()
    wait_for_verdict(page, "wrong_answer")
    expect(page.locator('.diagnosis[data-code="mask-inverted"]')).to_be_visible()
    row = page.locator('tr[data-case="masked"]')
    expect(row.locator('li[data-output="output"]')).to_have_attribute("data-status", "failed")
    expect(row.locator('li[data-output="weights"]')).to_contain_text("largest error")
    for output in ("output", "weights"):
        expect(
            page.locator(f'figure[data-picture="heatmap"][data-output="{output}"]')
        ).to_be_visible()
    expect(page.locator('tr[data-case="blocked-row"]')).to_contain_text("must raise ValueError")
    shot(page, "contract-demo-result", full_page=True)
    assert axe_violations(page) == []


def test_the_instructor_form_is_generated_from_the_parameters(
    fixtures_page: Page, fixtures_server: Server
) -> None:
    page = fixtures_page
    open_field_form(page, fixtures_server, "contract-demo")
    mask = page.get_by_label("mask: nested lists of true/false, shape (n_q, n_k)")
    expect(mask).to_be_visible()
    expect(page.get_by_label("temperature: an integer from 1 to 8")).to_have_attribute("max", "8")

    # A case without a mask: the optional parameter is None.
    page.get_by_label("Name").fill("form-plain")
    page.get_by_role("button", name="Fill with the first public example").click()
    page.get_by_label("no value (mask=None)").check()
    expect(mask).to_be_disabled()
    page.get_by_role("button", name="Add case").click()
    expect(page.locator("#add-status")).to_contain_text("Added form-plain")
    expect(page.locator('#cases-table tr[data-case="form-plain"]')).to_be_visible()

    # A case that must raise: a query with every key blocked.
    page.get_by_label("Name").fill("form-blocked")
    page.get_by_label("no value (mask=None)").uncheck()
    page.get_by_label("Q: nested lists of numbers").fill(
        json.dumps([[0.1, 0.2, 0.3, 0.4, 0.5]] * 2)
    )
    page.get_by_label("K: nested lists of numbers").fill(
        json.dumps([[0.5, 0.4, 0.3, 0.2, 0.1]] * 3)
    )
    page.get_by_label("V: nested lists of numbers").fill(json.dumps([[1.0, 2.0]] * 3))
    page.get_by_label("temperature: an integer").fill("2")
    mask.fill(json.dumps([[True, False, True], [False, False, False]]))
    page.get_by_label("Must raise (optional)").fill("ValueError")
    page.get_by_role("button", name="Add case").click()
    expect(page.locator("#add-status")).to_contain_text("Added form-blocked")

    # A field error names the field.
    page.get_by_label("Name").fill("form-bad")
    page.get_by_label("Must raise (optional)").fill("")
    mask.fill(json.dumps([[1, 0, 1], [0, 1, 1]]))
    page.get_by_role("button", name="Add case").click()
    expect(page.locator("#add-status")).to_contain_text("inputs.mask")
    shot(page, "contract-demo-instructor-form", full_page=True)
    assert axe_violations(page) == []
