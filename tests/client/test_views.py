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
