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
from tests.instructors.conftest import as_json, case_inputs
from tests.support.codes import WRONG


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


def test_staff_lists_and_gradebook_are_cut_for_them(course: Course) -> None:
    """What the course's staff read of its students' work on the problem: the submissions
    list, the gradebook, one student's record and the class insight, for a TA under ``hidden``
    elsewhere, against the instructor, who is under no policy."""
    visible = course.create(feedback="visible")
    made = course.submit(visible["id"], WRONG, wait=25)
    assert made.status_code == 200 and made.json()["verdict"] == "wrong_answer", made.text
    enrol_as_student_elsewhere(course, "ta")
    base = f"{course.base}/{visible['id']}"
    student = course.people.users["student"]
    paths = {
        "list": f"/api/courses/{course.id}/submissions",
        "gradebook": f"{base}/gradebook",
        "record": f"{base}/students/{student}",
        "insight": f"{base}/insight",
    }
    for who, cut in (("ta", True), ("instructor", False)):
        read = {name: get(course, path, who).json() for name, path in paths.items()}
        (row,) = read["list"]["items"]
        (attempt,) = read["record"]["submissions"]
        (cell,) = read["gradebook"]["students"][0]["cells"]
        (problem,) = read["insight"]["problems"]
        if cut:
            assert row["diagnoses"] == [] and row["finished_at"] is None
            assert attempt["view"] == "verdict" and attempt["report"]["diagnoses"] == []
            assert attempt["report"]["tests"] == [] and attempt["finished_at"] is None
            assert cell["diagnosis"] is None and problem["diagnoses"] == []
            assert "missing-wo" not in json.dumps(read)
        else:
            assert row["diagnoses"] == ["missing-wo"] and row["finished_at"]
            assert attempt["view"] == "visible" and attempt["finished_at"]
            assert cell["diagnosis"]["code"] == "missing-wo"
            assert problem["diagnoses"][0]["code"] == "missing-wo"


def test_an_instructors_practice_list_is_cut_for_them(course: Course) -> None:
    """The deployment's instructors list every practice submission in full, except on a
    problem where they are a student under a restricting policy."""
    practised = course.api.post(
        f"/api/problems/{PROBLEM}/submissions?wait=25",
        json={"code": WRONG},
        headers=course.people.headers("outsider"),
    )
    assert practised.status_code == 200, practised.text
    listed = get(course, "/api/submissions", "instructor").json()["items"]
    assert listed[0]["diagnoses"] == ["missing-wo"] and listed[0]["finished_at"]
    enrol_as_student_elsewhere(course, "instructor")
    (row,) = get(course, "/api/submissions", "instructor").json()["items"]
    assert row["diagnoses"] == [] and row["finished_at"] is None


def test_a_hidden_student_elsewhere_reads_no_hidden_catalog_case(course: Course) -> None:
    """The catalog's hidden cases grade Y's assignment too: a deployment instructor who is a
    student under ``hidden`` in Y reads the catalog as a student does (404, public ones only)."""
    made = course.api.post(
        f"/api/problems/{PROBLEM}/test-cases",
        json={"name": "secret", "visibility": "hidden", "inputs": as_json(case_inputs(seed=7))},
        headers=course.people.headers("admin"),
    )
    assert made.status_code == 201, made.text
    case = f"/api/problems/{PROBLEM}/test-cases/{made.json()['id']}"
    listing = f"/api/problems/{PROBLEM}/test-cases"

    def hidden_listed() -> int:
        cases = get(course, listing, "instructor").json()["cases"]
        return sum(c["visibility"] != "public" for c in cases)

    assert get(course, case, "instructor").json()["inputs"]
    assert hidden_listed() > 0
    enrol_as_student_elsewhere(course, "instructor")
    refused = course.api.get(case, headers=course.people.headers("instructor"))
    assert refused.status_code == 404, refused.text
    assert hidden_listed() == 0
    # Administrators and the other deployment instructors still read it.
    assert get(course, case, "admin").json()["inputs"]
    assert get(course, case, "other_instructor").json()["inputs"]
