"""A student's strictest feedback policy follows them into every role (issue 35, item 3).

The attack: a person who is a student under ``hidden`` in one course (Y) and TA or instructor
in another (X), where an assignment on the same problem is ``visible`` (what an LMS deep link
to one problem makes), submits in X. The same hidden cases grade both, so every report on the
problem they read, their own in X, a student's of X, their practice, is cut as Y cuts theirs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.courses.models import Membership
from tests.assignments.conftest import PROBLEM, Course, assignment_body
from tests.assignments.test_feedback import (
    HIDDEN_FAIL,
    assert_no_hidden_detail,
    submit_failing,
    surfaces,
)


def enrol_as_student_elsewhere(course: Course, who: str, feedback: str = "hidden") -> None:
    """``who`` becomes a student of the other course (Y), which assigns the problem under
    ``feedback``."""
    with course.api.app.state.sessions() as session:  # type: ignore[attr-defined]
        session.add(
            Membership(
                course_id=course.people.courses["other_course"],
                user_id=course.people.users[who],
                role="student",
            )
        )
        session.commit()
    made = course.api.post(
        f"/api/courses/{course.people.courses['other_course']}/assignments",
        json=assignment_body(feedback=feedback),
        headers=course.people.headers("other_instructor"),
    )
    assert made.status_code == 201, made.text


def get(course: Course, path: str, who: str) -> Any:
    response = course.api.get(path, headers=course.people.headers(who))
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize("who", ["ta", "instructor"])
def test_a_hidden_student_elsewhere_sees_no_hidden_case_as_staff(course: Course, who: str) -> None:
    visible = course.create(feedback="visible")
    enrol_as_student_elsewhere(course, who)
    # Their own submission in X, where they are staff: on every surface they can read.
    body = submit_failing(course, visible["id"], who=who)
    assert body["view"] == "verdict", body["view"]
    assert body["tests"] == [] and body["diagnoses"] == [] and body["timings"] == {}
    assert_no_hidden_detail(json.dumps(body))
    for where, text in surfaces(course, body["id"], who, visible["id"]).items():
        assert_no_hidden_detail(text), where
    attempts = get(course, f"{course.base}/{visible['id']}/problems/{PROBLEM}/attempts", who)
    assert attempts.json()["feedback"] == "verdict"
    # A student's submission in X: its hidden cases are the same ones.
    theirs = submit_failing(course, visible["id"], who="student")
    assert theirs["view"] == "visible" and "hidden-1" in json.dumps(theirs)
    read = get(course, f"/api/submissions/{theirs['id']}", who)
    assert read.json()["view"] == "verdict"
    assert_no_hidden_detail(read.text)
    # Practice on the problem is cut for them too (the deployment's instructors were not).
    practice = course.api.post(
        f"/api/problems/{PROBLEM}/submissions?wait=25",
        json={"code": HIDDEN_FAIL},
        headers=course.people.headers(who),
    )
    assert practice.status_code == 200, practice.text
    assert practice.json()["view"] == "verdict"
    assert_no_hidden_detail(practice.text)
    # X's other staff, under no policy elsewhere, still read everything.
    other_staff = "instructor" if who == "ta" else "ta"
    full = get(course, f"/api/submissions/{body['id']}", other_staff)
    assert full.json()["view"] == "visible" and "hidden-1" in full.text


def test_summary_elsewhere_cuts_to_the_summary(course: Course) -> None:
    visible = course.create(feedback="visible")
    enrol_as_student_elsewhere(course, "ta", feedback="summary")
    body = submit_failing(course, visible["id"], who="ta")
    assert body["view"] == "summary" and body["hidden_total"] == 9
    assert_no_hidden_detail(json.dumps(body))


def test_a_visible_policy_elsewhere_cuts_nothing(course: Course) -> None:
    visible = course.create(feedback="visible")
    enrol_as_student_elsewhere(course, "ta", feedback="visible")
    body = submit_failing(course, visible["id"], who="ta")
    assert body["view"] == "visible" and "hidden-1" in json.dumps(body)
