"""A problem with a PyTorch version, on a server that does not offer PyTorch (GRADER_OFFER_TORCH
=false here; the same where torch is not installed): the page says so in place of the framework
switch, and the API lists the framework as unavailable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import Server, browsing, serving
from tests.web.helpers import open_problem

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def torchless(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("torchless"), GRADER_OFFER_TORCH="false") as running:
        yield running


@pytest.fixture
def torchless_page(browser: object, torchless: Server) -> Iterator[object]:
    with browsing(browser, torchless.url) as pg:
        yield pg


def test_the_page_says_pytorch_is_not_available_instead_of_hiding_it(
    torchless: Server, torchless_page: Page
) -> None:
    detail = httpx.get(f"{torchless.url}/api/problems/masked-attention", timeout=10).json()
    assert list(detail["starters"]) == ["numpy"]
    assert detail["frameworks_unavailable"] == ["torch"]

    page = torchless_page
    open_problem(page, "masked-attention")
    note = page.locator("#framework-unavailable")
    expect(note).to_be_visible()
    expect(note).to_have_text(
        "PyTorch is not installed on this server: submissions are graded as NumPy."
    )
    expect(page.get_by_label("Framework")).to_have_count(0)
