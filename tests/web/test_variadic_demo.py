"""The page on a problem with variadic shapes (tests/problems/fixtures-variadic/variadic-demo):
the statement lists every array's declared shape with its "*lead" group explained, and the
instructor form labels the fields the same way, accepts a case with leading axes and refuses one
whose groups disagree, naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.problems.test_variadic_demo import FIXTURES
from tests.web.conftest import Server, browsing, serving
from tests.web.helpers import axe_violations, shot
from tests.web.test_instructor import _instructor_token

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def variadic_server(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("variadic-server")
    with serving(root, GRADER_PROBLEM_DIRS=str(FIXTURES)) as running:
        yield running


@pytest.fixture
def variadic_page(browser: Browser, variadic_server: Server) -> Iterator[Page]:
    with browsing(browser, variadic_server.url) as page:
        assert isinstance(page, Page)
        yield page


def test_the_statement_shows_each_declared_shape_and_explains_the_groups(
    variadic_page: Page,
) -> None:
    page = variadic_page
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
    variadic_page: Page, variadic_server: Server
) -> None:
    page = variadic_page
    token = _instructor_token(variadic_server)
    page.goto("/instructor")
    page.get_by_label("Instructor token").fill(token)
    page.get_by_role("button", name="Use token").click()
    page.locator("#problem-select").select_option("variadic-demo")
    page.get_by_label("a field per parameter").check()
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
