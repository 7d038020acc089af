"""Practice cannot undo an assignment's feedback policy: while an assignment that restricts
feedback on a problem is in progress, practice reports on that problem (signed in or not) are
cut the same way, since they run the same hidden cases. Its staff and the deployment's
instructors still see everything, and the cut lifts when the policy does."""

from __future__ import annotations

from typing import Any

from tests.assignments.conftest import PROBLEM, Course, at
from tests.assignments.test_feedback import HIDDEN_FAIL, assert_no_hidden_detail


def practise(course: Course, who: str) -> dict[str, Any]:
    made = course.api.post(
        f"/api/problems/{PROBLEM}/submissions?wait=25",
        json={"code": HIDDEN_FAIL},
        headers=course.people.headers(who),
    )
    assert made.status_code == 200, made.text
    body: dict[str, Any] = made.json()
    assert body["verdict"] == "runtime_error"
    return body


def read(course: Course, submission_id: str, who: str) -> dict[str, Any]:
    got = course.api.get(f"/api/submissions/{submission_id}", headers=course.people.headers(who))
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


def test_practice_is_cut_while_a_summary_assignment_runs(course: Course) -> None:
    before = practise(course, "anonymous")
    assert before["view"] == "visible" and "hidden-1" in str(before)
    created = course.create(feedback="summary")
    for who in ("anonymous", "student", "other_student", "outsider"):
        body = practise(course, who)
        assert body["view"] == "summary", who
        assert body["hidden_total"] == 9 and body["hidden_passed"] == 0
        # No time of the run either (issue 35): only the arrival.
        assert body["started_at"] is None and body["finished_at"] is None, who
        assert_no_hidden_detail(str(body))
        assert_no_hidden_detail(str(read(course, body["id"], who)))
    # Even a report made before the assignment existed is cut now.
    assert read(course, before["id"], "anonymous")["view"] == "summary"
    # The course's staff and the deployment's instructors see everything.
    for who in ("ta", "instructor", "admin"):
        body = practise(course, who)
        assert body["view"] == "visible" and "hidden-1" in str(body), who
    # Publishing the feedback lifts the cut.
    published = course.api.post(
        f"{course.base}/{created['id']}/publish",
        json={"feedback": True, "scores": True},
        headers=course.people.headers("instructor"),
    )
    assert published.status_code == 200, published.text
    assert "hidden-1" in str(practise(course, "anonymous"))


def test_a_hidden_policy_cuts_practice_to_the_verdict(course: Course) -> None:
    course.create(feedback="hidden")
    body = practise(course, "student")
    assert body["view"] == "verdict" and body["tests"] == [] and body["diagnoses"] == []


def test_after_due_date_restricts_until_the_last_deadline(course: Course) -> None:
    created = course.create(feedback="after_due_date", due_at=at(-2))
    assert practise(course, "student")["view"] == "visible", "every deadline has passed"
    extended = course.api.post(
        f"{course.base}/{created['id']}/overrides",
        json={"user_id": course.people.users["student_b"], "until": at(5)},
        headers=course.people.headers("instructor"),
    )
    assert extended.status_code == 201, extended.text
    # One student still works under the policy: nobody's practice may show the cases.
    assert practise(course, "other_student")["view"] == "summary"


def test_a_visible_assignment_leaves_practice_alone(course: Course) -> None:
    course.create(feedback="visible")
    assert practise(course, "student")["view"] == "visible"
