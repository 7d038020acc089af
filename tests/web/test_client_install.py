"""The problem list shows the one-line install of the client, and that line's URL is the wheel."""

from __future__ import annotations

import re
import subprocess

import httpx
import pytest
from playwright.sync_api import Page, expect

from app.core.config import REPO_ROOT
from tests.web.conftest import Server
from tests.web.helpers import shot

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def client_wheel() -> None:
    subprocess.run(["make", "-s", "client-wheel"], cwd=REPO_ROOT, check=True, timeout=300)


def test_the_problem_list_shows_the_pip_install_line(
    page: Page, server: Server, client_wheel: None
) -> None:
    page.goto("/")
    line = page.locator("#client-install")
    wheel_name = r"tensorjudge_client-[\w.]+-py3-none-any\.whl"
    expect(line).to_have_text(
        re.compile(rf"^pip install {re.escape(server.url)}/client/{wheel_name}$")
    )
    expect(page.get_by_role("heading", name="Work from a terminal or a notebook")).to_be_visible()
    shot(page, "client-install", full_page=True)
    url = line.inner_text().removeprefix("pip install ")
    wheel = httpx.get(url, timeout=30)
    assert wheel.status_code == 200 and wheel.content[:2] == b"PK"  # a zip: the wheel itself
