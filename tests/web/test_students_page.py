"""A student on the problem page at 1400 px: code that fails before any case shows the error and
its line first (marked in the editor) and the rows that did not run as one line; a missing
function is named as such; the tests table fits its column and shows a passed hidden case's
shape; heat-map captions read right inside their finding's card; the signature shows defaults
and the examples Python literals. Screenshots in tests/artifacts/web/students-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.core.config import REPO_ROOT
from tests.web.helpers import (
    axe_violations,
    element_shot,
    open_problem,
    set_code,
    shot,
    wait_for_verdict,
)

pytestmark = pytest.mark.timeout(300)

CORPUS = Path(__file__).parents[1] / "problems" / "corpus"
STARTER = (REPO_ROOT / "problems" / "softmax-backward" / "starter.py").read_text()
WIDE = {"width": 1400, "height": 900}


def softmax_page(page: Page) -> None:
    page.set_viewport_size(WIDE)
    open_problem(page, "softmax-backward")


def submit(page: Page, code: str, verdict: str) -> None:
    set_code(page, code)
    page.get_by_role("button", name="Submit").click()
    wait_for_verdict(page, verdict)


def block_order(page: Page) -> list[str]:
    """The result panel's blocks, top to bottom, by their heading or class."""
    order: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('.result > *')].map((el) => {
            const heading = el.querySelector('h3');
            return el.id || (heading ? heading.textContent : el.className);
        })"""
    )
    return order


def test_a_syntax_error_comes_first_with_its_line_marked(page: Page) -> None:
    softmax_page(page)
    broken = STARTER.replace("axis=-1):", "axis=-1)", 1)
    assert broken != STARTER and broken.splitlines()[3].startswith("def softmax_backward")
    submit(page, broken, "compile_error")
    result = page.locator("#result")
    expect(result.locator(".verdict-label")).to_have_text("Syntax error on line 4")
    failure = result.locator(".load-failure")
    expect(failure).to_have_attribute("data-kind", "syntax_error")
    expect(failure.locator("h3")).to_have_text("Syntax error on line 4")
    expect(failure.locator(".load-message")).to_have_text("SyntaxError: expected ':'")
    # The error comes right after the verdict, before the requirements and the tests.
    order = block_order(page)
    assert order[:4] == [
        "verdict",
        "Syntax error on line 4",
        "Requirements",
        "Tests (0 of 15 passed)",
    ]
    # Every requirement and every row that did not run: one line each.
    expect(result.locator("[data-not-checked]")).to_have_text(
        "None of the 3 requirements could be checked: your code did not load."
    )
    expect(result.locator("[data-not-run]")).to_have_text(
        "None of the 15 tests ran: your code did not load."
    )
    assert result.locator("table.tests").count() == 0
    assert result.locator("li.req").count() == 0
    # The editor marks line 4, the one the error points to.
    marked = page.locator(".cm-content .cm-error-line")
    expect(marked).to_have_count(1)
    expect(marked).to_have_text("def softmax_backward(probabilities, upstream, axis=-1)")
    expect(marked).to_have_attribute("data-error-line", "4")
    shot(page, "students-syntax-error")
    failure.get_by_role("button", name="Show line 4 in the editor").click()
    assert page.evaluate("() => document.activeElement.classList.contains('cm-content')")
    # Fixing the code and running again clears the mark.
    submit(page, STARTER, "runtime_error")
    expect(page.locator(".cm-error-line")).to_have_count(0)
    assert page.locator("#result .load-failure").count() == 0
    assert axe_violations(page) == []


def test_a_missing_function_is_named_not_does_not_compile(page: Page) -> None:
    softmax_page(page)
    renamed = STARTER.replace("def softmax_backward(", "def softmax_grad(", 1)
    assert renamed != STARTER
    submit(page, renamed, "compile_error")
    result = page.locator("#result")
    expect(result.locator(".verdict-label")).to_have_text("No function named softmax_backward")
    expect(result.locator(".load-failure")).to_have_attribute("data-kind", "missing_function")
    expect(page.locator("#progress-text")).to_contain_text("No function named softmax_backward")
    expect(result).not_to_contain_text("Does not compile")
    expect(result).not_to_contain_text("compile")
    # No line to mark.
    expect(page.locator(".cm-error-line")).to_have_count(0)
    shot(page, "students-missing-function")


def test_an_error_on_import_is_first_with_its_line(page: Page) -> None:
    softmax_page(page)
    code = "SCALE = numpy.sqrt(2)\n" + STARTER
    submit(page, code, "runtime_error")
    failure = page.locator("#result .load-failure")
    expect(failure).to_have_attribute("data-kind", "raised_on_import")
    expect(failure.locator(".load-message")).to_have_text("NameError: name 'numpy' is not defined")
    expect(page.locator(".cm-error-line")).to_have_attribute("data-error-line", "1")


def test_the_tests_table_fits_and_passed_hidden_rows_show_their_shape(page: Page) -> None:
    softmax_page(page)
    submit(
        page, (CORPUS / "softmax-backward" / "ignores_axis_einsum.py").read_text(), "wrong_answer"
    )
    table = page.locator("#result table.tests")
    expect(table).to_be_visible()
    scroll = page.locator("#result .table-scroll")
    widths = scroll.evaluate("el => [el.scrollWidth, el.clientWidth]")
    assert widths[0] <= widths[1], f"the table needs sideways scrolling: {widths}"
    column = page.locator(".workspace").bounding_box()
    time_header = table.get_by_role("columnheader", name="Time").bounding_box()
    assert column and time_header
    assert time_header["x"] + time_header["width"] <= column["x"] + column["width"] + 1
    hidden_passed = table.locator('tr[data-visibility="hidden"].case-passed')
    hidden_failed = table.locator('tr[data-visibility="hidden"].case-failed')
    assert hidden_passed.count() >= 1 and hidden_failed.count() >= 1
    for row in hidden_passed.all():
        expected, yours = row.locator("td.case-shape").inner_text().split(" / ")
        assert expected == yours and expected.startswith("("), (expected, yours)
    for row in hidden_failed.all():
        # What a failed hidden case returned comes from the submission: never shown.
        assert row.locator("td.case-shape").inner_text().endswith(" / ?")
    # The largest error and where it is, in one cell.
    public_failed = table.locator('tr[data-visibility="public"].case-failed td.case-error').first
    expect(public_failed).to_contain_text(" at [")
    table.scroll_into_view_if_needed()
    shot(page, "students-tests-table", full_page=True)


def test_heat_map_captions_read_right_inside_the_findings_card(page: Page) -> None:
    page.set_viewport_size(WIDE)
    open_problem(page, "masked-attention")
    submit(
        page, (CORPUS / "masked-attention" / "mask_after_softmax.py").read_text(), "wrong_answer"
    )
    card = page.locator('#result article.diagnosis[data-code="mask-after-softmax"]')
    weights = card.locator('figure[data-picture="heatmap"][data-output="weights"]')
    expect(weights).to_be_visible()
    expect(weights.locator("figcaption")).to_contain_text(
        "How far each cell of your weights for first-key-only is from the expected value"
    )
    expect(
        card.locator('figure[data-picture="heatmap"][data-output="output"] figcaption')
    ).to_contain_text("your output for first-key-only")
    expect(page.locator("#result")).not_to_contain_text("output output")
    # Two outputs per row: the table still fits its column.
    widths = page.locator("#result .table-scroll").evaluate(
        "el => [el.scrollWidth, el.clientWidth]"
    )
    assert widths[0] <= widths[1], f"the table needs sideways scrolling: {widths}"
    outer = card.bounding_box()
    for figure in card.locator("figure").all():
        box = figure.bounding_box()
        assert outer and box
        assert outer["x"] <= box["x"] and box["x"] + box["width"] <= outer["x"] + outer["width"]
        assert box["y"] + box["height"] <= outer["y"] + outer["height"]
    element_shot(card, "students-heat-map-in-card")


def test_signature_defaults_and_python_literals_in_examples(page: Page) -> None:
    softmax_page(page)
    signature = page.locator('section[aria-labelledby="sig-heading"] pre.code-block')
    expect(signature).to_have_text(
        "softmax_backward(probabilities, upstream, axis=-1) -> np.ndarray"
    )
    page.set_viewport_size(WIDE)
    open_problem(page, "masked-attention")
    example = page.locator("details.example", has_text="first-key-only")
    example.locator("summary").click()
    values = example.locator("pre.value").all_inner_texts()
    text = "\n".join(values)
    assert "True" in text and "False" in text, text
    assert "true" not in text and "false" not in text, text
    example.scroll_into_view_if_needed()
    shot(page, "students-python-literals")
