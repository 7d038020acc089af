"""What the browser tests do through the page: fill the editor, read it, wait for a verdict,
sign in as an instructor, save screenshots."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from app.core.config import REPO_ROOT
from tests.support.codes import CORRECT, WRONG
from tests.web.conftest import Server

ARTIFACTS = REPO_ROOT / "tests" / "artifacts" / "web"
GRADING_TIMEOUT_MS = 90_000

MISSING_WO = WRONG
# Returns the heads unmerged: shape (batch, h, n_q, d_k) instead of (batch, n_q, d_model).
UNMERGED = CORRECT.replace(
    "return heads.transpose(0, 2, 1, 3).reshape(batch, n_q, d_model) @ W_o", "return heads"
)
assert UNMERGED != CORRECT


def shot(page: Page, name: str, *, full_page: bool = False) -> Path:
    """Saves a screenshot under tests/artifacts/web/ for a person to look at."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def element_shot(locator: Locator, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    locator.screenshot(path=str(path))
    return path


def set_code(page: Page, code: str) -> None:
    """Replaces the editor's content the way a person would: select all, then paste-like input."""
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(code)


def editor_text(page: Page) -> str:
    # An empty line renders as <br>, whose inner text is "\n".
    lines: list[str] = page.locator(".cm-content .cm-line").all_inner_texts()
    return "\n".join(line.rstrip("\n") for line in lines)


def open_problem(page: Page, problem_id: str = "multi-head-attention") -> None:
    page.goto(f"/problems/{problem_id}")
    page.locator(".cm-content").wait_for()


AXE = REPO_ROOT / "frontend" / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page: Page) -> list[dict[str, object]]:
    """WCAG 2.1 A/AA violations that axe-core finds on the page as it is now."""
    assert AXE.exists(), f"{AXE} is missing: run `cd frontend && npm ci`"
    page.evaluate(AXE.read_text())
    result: dict[str, list[dict[str, object]]] = page.evaluate(
        """async () => await axe.run(document, {
            runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
        })"""
    )
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [n["target"] for n in v["nodes"]][:5],  # type: ignore[attr-defined]
        }
        for v in result["violations"]
    ]


def rendered_statement(page: Page, more_formulas_than: int) -> Locator:
    """The problem's statement, once its math is typeset: more than ``more_formulas_than``
    formulas, none KaTeX could not parse, and no ``$`` left in the prose."""
    statement = page.locator(".statement")
    expect(statement.locator(".katex").first).to_be_visible()
    assert statement.locator(".katex").count() > more_formulas_than
    assert statement.locator(".katex-error").count() == 0
    assert "$" not in statement.locator(".markdown").inner_text()
    return statement


def wait_for_verdict(page: Page, verdict: str) -> None:
    banner = page.locator(f'#verdict[data-verdict="{verdict}"]')
    banner.wait_for(timeout=GRADING_TIMEOUT_MS)
    expect(page.locator("#progress")).not_to_have_class("progress active")


def instructor_token(server: Server, role: str = "instructor") -> str:
    """A new token of ``role``, made by the CLI against the server's own database. The page's
    case forms change the catalog, which takes an admin's."""
    out = subprocess.run(
        [sys.executable, "-m", "app", "tokens", "create", "--role", role, "--name", f"web-{role}"],
        cwd=REPO_ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    # The token is printed once; take the longest URL-safe word in the output.
    words = re.findall(r"[A-Za-z0-9_\-.~]{20,}", out)
    assert words, f"no token in the CLI's output: {out!r}"
    return max(words, key=len)


def open_field_form(page: Page, server: Server, problem_id: str) -> None:
    """The instructor page, signed in, on the form with a field per parameter of the problem."""
    page.goto("/instructor")
    page.get_by_label("Instructor token").fill(instructor_token(server, "admin"))
    page.get_by_role("button", name="Use token").click()
    page.locator("#problem-select").select_option(problem_id)
    page.get_by_label("a field per parameter").check()
