"""The page's framework switch in a real browser: masked-attention switched to PyTorch opens the
torch starter, and a PyTorch submission with the mask inverted gets the diagnosis card."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from sandbox.backends.runtime import find_torch
from tests.web.helpers import editor_text, open_problem, set_code, wait_for_verdict

pytestmark = [
    pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed"),
    pytest.mark.timeout(300),
]

PROBLEM = "masked-attention"
CORPUS = Path(__file__).parents[1] / "problems" / "corpus" / PROBLEM


def test_switching_to_pytorch_opens_its_starter_and_grades_a_torch_submission(
    page: Page,
) -> None:
    open_problem(page, PROBLEM)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_label("Framework").select_option("torch")
    expect(page.locator(".cm-content")).to_contain_text("import torch")
    assert editor_text(page).startswith("import torch")

    set_code(page, (CORPUS / "torch_masked_fill_keep_mask.py").read_text())
    page.get_by_role("button", name="Submit").click()
    wait_for_verdict(page, "wrong_answer")
    card = page.locator('#result article.diagnosis[data-code="mask-inverted"]')
    expect(card).to_be_visible()
