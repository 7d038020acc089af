"""The grader's public-only view: computed from the same run, without any hidden case's outcome."""

from __future__ import annotations

from app.grading.pipeline import grade_submission
from app.problems.loader import Problem
from sandbox.backends.bwrap import BwrapSandbox
from tests.assignments.test_feedback import HIDDEN_FAIL, MARKER
from tests.support.codes import CORRECT, WRONG


def test_hidden_failures_leave_the_public_view_clean(mha: Problem) -> None:
    report = grade_submission(mha, HIDDEN_FAIL, BwrapSandbox())
    view = report.public_view
    assert view is not None
    assert (view.hidden_passed, view.hidden_total) == (0, len(mha.hidden))
    assert report.error is not None and "hidden test" in report.error.lower()
    assert view.error is None  # the only error was in a hidden case
    assert MARKER not in view.model_dump_json()
    assert "hidden-" not in view.model_dump_json()


def test_a_public_mistake_is_diagnosed_in_both(mha: Problem) -> None:
    report = grade_submission(mha, WRONG, BwrapSandbox())
    view = report.public_view
    assert view is not None and view.hidden_passed == 0
    assert [d.code for d in view.diagnoses] == [d.code for d in report.diagnoses] == ["missing-wo"]


def test_accepted_is_accepted_in_both(mha: Problem) -> None:
    report = grade_submission(mha, CORRECT, BwrapSandbox())
    view = report.public_view
    assert view is not None and (view.hidden_passed, view.hidden_total) == (9, 9)
    assert view.requirements == report.requirements and view.diagnoses == []
