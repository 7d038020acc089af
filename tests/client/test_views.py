"""The result views are built from the JSON alone: a real result renders the page's parts, and
fields the client does not know (a result with several named outputs, a new verdict) are shown
rather than dropped or fatal."""

from __future__ import annotations

import copy

import pytest
from tensorjudge_client import Judge, Result, view

from tests.client.conftest import PROBLEM, Grader
from tests.support.codes import WRONG

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def wrong_result(grader: Grader) -> Result:
    with Judge(grader.url) as judge:
        return judge.submit(PROBLEM, WRONG)


def test_text_and_html_views_of_a_real_result(wrong_result: Result):
    text = repr(wrong_result)
    assert text.startswith("✗ Wrong answer")
    assert "Output projection W_o missing [missing-wo]" in text
    assert "breaks: Merge heads and project" in text
    html = wrong_result._repr_html_()
    assert html.count('class="tj-card"') == len(wrong_result.diagnoses) == 1
    assert html.count("<tr class=") == len(wrong_result.tests)
    assert "<script" not in html


def test_unknown_fields_are_shown_not_fatal(wrong_result: Result):
    raw = copy.deepcopy(wrong_result.raw)
    raw["verdict"] = "partially_accepted"
    raw["outputs"] = ["context", "attention_weights"]
    for n, test in enumerate(raw["tests"]):
        test["output"] = "attention_weights" if n % 2 else "context"
        test["cosine"] = 0.5
        test["nested"] = {"not": ["a", {"cell": 1}]}
    raw["diagnoses"].append({"code": "future-check", "title": "<b>Escaped</b>"})
    future = Result(raw)
    assert "partially_accepted" in repr(future)
    # Wide enough that no cell folds, so each value reads whole.
    text = view.to_text(view.result_renderable(raw), width=250)
    assert "Output" in text and "attention_weights" in text and "Cosine" in text
    html = future._repr_html_()
    assert "attention_weights" in html and "<th>Cosine</th>" in html
    assert "&lt;b&gt;Escaped&lt;/b&gt;" in html and "<b>Escaped</b>" not in html
    assert 'data-code="future-check"' in html


def test_a_submission_not_done_yet_says_so(wrong_result: Result):
    raw = {"id": wrong_result.id, "status": "running"}
    assert repr(Result(raw)).strip() == f"Submission {wrong_result.id} is running."
    assert "is running" in Result(raw)._repr_html_()


def test_a_single_output_table_has_no_outputs_column_and_python_shapes(wrong_result: Result):
    assert all(t.get("outputs") == [] for t in wrong_result.tests)
    text = view.to_text(view.result_renderable(wrong_result.raw), width=200)
    table = text[text.index("Tests (") :]
    assert "Outputs" not in table and "[]" not in table
    shape = wrong_result.tests[0]["expected_shape"]
    assert f"{tuple(shape)} / {tuple(shape)}" in table
    assert "<th>Outputs</th>" not in wrong_result._repr_html_()
    # One axis reads as Python writes it, as the page does.
    assert view.shape_text([2]) == "(2,)" and view.shape_text([]) == "()"


def test_several_outputs_show_as_one_column_of_verdicts(wrong_result: Result):
    raw = copy.deepcopy(wrong_result.raw)
    for test in raw["tests"]:
        test["outputs"] = [
            {"name": "context", "status": "failed"},
            {"name": "weights", "status": "passed"},
        ]
    text = view.to_text(view.result_renderable(raw), width=250)
    assert "Outputs" in text and "context ✗, weights ✓" in text


def test_problems_are_typed_records_with_a_text_and_html_table(grader: Grader):
    with Judge(grader.url) as judge:
        problems = judge.problems()
    first = next(p for p in problems if p.id == PROBLEM)
    assert first.title == "Multi-head attention" and first["id"] == PROBLEM
    assert first.difficulty and first.summary == first.get("summary")
    assert repr(first) == f"<Problem {PROBLEM!r}: Multi-head attention ({first.difficulty})>"
    table = repr(problems)
    assert table.startswith("Problems") and PROBLEM in table and "Difficulty" in table
    html = problems._repr_html_()
    assert html.count("<tr>") == len(problems) + 1 and "<script" not in html
    assert problems.raw[0] == problems[0].raw and isinstance(problems.raw[0], dict)


def test_queue_place_reads_as_the_page_says_it() -> None:
    from tensorjudge_client.cli import describe_event
    from tensorjudge_client.view import queue_text

    assert describe_event("queue", {"ahead": 41, "estimate_seconds": 63.0}) == (
        "Queued: 41 ahead of you, about 1 min"
    )
    assert queue_text({"ahead": 0, "estimate_seconds": 4.2}) == "Queued: next in line, about 4 s"
    assert queue_text({"ahead": 3, "estimate_seconds": None}) == "Queued: 3 ahead of you"
