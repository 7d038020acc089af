"""The page on a problem with variadic shapes (tests/problems/fixtures-variadic/variadic-demo):
the statement lists every array's declared shape with its "*lead" group explained, and the
instructor form labels the fields the same way, accepts a case with leading axes and refuses one
whose groups disagree, naming the field."""

from __future__ import annotations

import json

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import Server
from tests.web.helpers import axe_violations, open_field_form, shot

pytestmark = pytest.mark.timeout(300)


def test_the_statement_shows_each_declared_shape_and_explains_the_groups(
    fixtures_page: Page,
) -> None:
    page = fixtures_page
    page.goto("/problems/variadic-demo")
    page.locator(".cm-content").wait_for()
    expect(page.locator('li[data-shape="q"]')).to_have_text("q (*lead, n_q, d)")
    expect(page.locator('li[data-shape="mask"]')).to_have_text(
        "mask (*mask_lead, mask_q, mask_k) bool, or None"
    )
    expect(page.locator('li[data-shape="output"]')).to_have_text(
        "output (*lead, n_q, n_k) (the result)"
    )
    expect(page.locator("#variadic-note")).to_have_text(
        "*lead, *mask_lead: any number of axes (none, one, two…), the same sizes everywhere it "
        "appears."
    )
    shot(page, "variadic-demo-statement", full_page=True)
    assert axe_violations(page) == []


def test_the_instructor_form_takes_leading_axes_and_names_a_mismatch(
    fixtures_page: Page, fixtures_server: Server
) -> None:
    page = fixtures_page
    open_field_form(page, fixtures_server, "variadic-demo")
    q = page.get_by_label("q: nested lists of numbers, shape (*lead, n_q, d); *lead: any number")
    k = page.get_by_label("k: nested lists of numbers, shape (*lead, n_k, d)")
    expect(q).to_be_visible()

    rng = np.random.default_rng(0)
    page.get_by_label("Name").fill("form-heads")
    q.fill(json.dumps(rng.standard_normal((2, 3, 2, 4)).tolist()))
    k.fill(json.dumps(rng.standard_normal((2, 3, 5, 4)).tolist()))
    page.get_by_label("no value (mask=None)").check()
    page.get_by_role("button", name="Add case").click()
    expect(page.locator("#add-status")).to_contain_text("Added form-heads")
    expect(page.locator('#cases-table tr[data-case="form-heads"]')).to_contain_text("q 2×3×2×4")

    page.get_by_label("Name").fill("form-bad")
    k.fill(json.dumps(rng.standard_normal((3, 5, 4)).tolist()))
    page.get_by_role("button", name="Add case").click()
    expect(page.locator("#add-status")).to_contain_text("inputs.k")
    expect(page.locator("#add-status")).to_contain_text("but q gives *lead=(2, 3)")
    shot(page, "variadic-demo-instructor-form", full_page=True)
    assert axe_violations(page) == []
