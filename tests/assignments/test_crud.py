"""Creating, reading, changing and deleting assignments: validation and who may do what."""

from __future__ import annotations

from typing import Any

import pytest

from tests.assignments.conftest import PROBLEM, Course, assignment_body, at, error_of
from tests.support.codes import WRONG


def test_instructor_creates_and_members_read(course: Course) -> None:
    created = course.create(
        late_deadlines=[{"until": at(48), "credit": 0.8}, {"until": at(72), "credit": 0.5}],
        max_attempts=3,
        attempt_penalties=[0, 0.05, 0.1],
        feedback="summary",
    )
    assert created["problems"][0]["problem_id"] == PROBLEM
    assert created["problems"][0]["title"]
    for who in ("student", "ta", "instructor", "admin"):
        assert course.listed(who) == [created["id"]], who
    mine = course.api.get(
        f"{course.base}/{created['id']}", headers=course.people.headers("student")
    ).json()["mine"]
    assert mine["open"] and mine["credit"] == 1.0 and mine["attempts_allowed"] == 3


@pytest.mark.parametrize("who", ["anonymous", "other_student", "outsider", "other_instructor"])
def test_outsiders_see_no_course(course: Course, who: str) -> None:
    created = course.create()
    for path in (course.base, f"{course.base}/{created['id']}"):
        response = course.api.get(path, headers=course.people.headers(who))
        assert response.status_code == (401 if who == "anonymous" else 404), response.text


@pytest.mark.parametrize("who", ["student", "ta"])
def test_only_instructors_change(course: Course, who: str) -> None:
    created = course.create()
    headers = course.people.headers(who)
    assert course.api.post(course.base, json=assignment_body(), headers=headers).status_code == 403
    path = f"{course.base}/{created['id']}"
    assert course.api.patch(path, json={"title": "x"}, headers=headers).status_code == 403
    assert course.api.delete(path, headers=headers).status_code == 403
    publish = course.api.post(f"{path}/publish", json={"feedback": True}, headers=headers)
    assert publish.status_code == 403
    unchanged = course.api.get(path, headers=course.people.headers("instructor")).json()
    assert unchanged["title"] == created["title"] and unchanged["feedback_published_at"] is None


def test_students_do_not_see_unreleased(course: Course) -> None:
    hidden = course.create(release_at=at(1), due_at=at(5))
    assert course.listed("student") == []
    response = course.api.get(
        f"{course.base}/{hidden['id']}", headers=course.people.headers("student")
    )
    assert response.status_code == 404
    assert error_of(response)["code"] == "assignment_not_found"
    ta = course.api.get(f"{course.base}/{hidden['id']}", headers=course.people.headers("ta"))
    assert ta.status_code == 200 and ta.json()["released"] is False


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"problems": [{"problem_id": "nope"}]}, "unknown_problem", "problems[0].problem_id"),
    (
        {"problems": [{"problem_id": PROBLEM}, {"problem_id": PROBLEM}]},
        "duplicate_problem",
        "problems[1].problem_id",
    ),
    ({"release_at": at(30), "due_at": at(24)}, "dates_out_of_order", "release_at"),
    (
        {"late_deadlines": [{"until": at(20), "credit": 0.5}]},
        "dates_out_of_order",
        "late_deadlines[0]",
    ),
    (
        {"late_deadlines": [{"until": at(48), "credit": 0.8}, {"until": at(40), "credit": 0.5}]},
        "dates_out_of_order",
        "late_deadlines[1]",
    ),
    (
        {"late_deadlines": [{"until": at(48), "credit": 0.5}, {"until": at(60), "credit": 0.8}]},
        "credit_increases",
        "late_deadlines[1]",
    ),
    (
        {"late_deadlines": [{"until": at(48), "credit": 0}]},
        "invalid_request",
        "late_deadlines.0.credit",
    ),
    ({"attempt_penalties": [0.1, 0.05]}, "penalties_decrease", "attempt_penalties[1]"),
    ({"attempt_penalties": [0, 1.5]}, "invalid_request", None),
    ({"due_at": "2030-01-01T10:00:00"}, "invalid_request", "due_at"),
    ({"max_attempts": 0}, "invalid_request", "max_attempts"),
    ({"feedback": "sometimes"}, "invalid_request", "feedback"),
    ({"surprise": 1}, "invalid_request", "surprise"),
]


@pytest.mark.parametrize(("change", "code", "field"), BAD)
def test_bad_assignments_are_refused_and_change_nothing(
    course: Course, change: dict[str, Any], code: str, field: str | None
) -> None:
    headers = course.people.headers("instructor")
    response = course.api.post(course.base, json=assignment_body(**change), headers=headers)
    assert response.status_code == 422, response.text
    error = error_of(response)
    assert error["code"] == code, error
    if field is not None:
        assert error["field"] == field, error
    assert course.listed("instructor") == []


def test_patch_is_judged_with_the_other_dates(course: Course) -> None:
    created = course.create(late_deadlines=[{"until": at(48), "credit": 0.8}])
    path = f"{course.base}/{created['id']}"
    headers = course.people.headers("instructor")
    response = course.api.patch(path, json={"due_at": at(50)}, headers=headers)
    assert response.status_code == 422
    assert error_of(response)["field"] == "late_deadlines[0]"
    moved = course.api.patch(path, json={"due_at": at(30), "max_attempts": 2}, headers=headers)
    assert moved.status_code == 200, moved.text
    assert moved.json()["max_attempts"] == 2
    assert moved.json()["late_deadlines"][0]["credit"] == 0.8
    cleared = course.api.patch(path, json={"max_attempts": None}, headers=headers)
    assert cleared.json()["max_attempts"] is None
    naive = course.api.patch(path, json={"due_at": "2030-01-01T00:00:00"}, headers=headers)
    assert naive.status_code == 422


def test_delete_and_publish(course: Course) -> None:
    created = course.create(feedback="hidden", hide_scores=True)
    path = f"{course.base}/{created['id']}"
    headers = course.people.headers("instructor")
    published = course.api.post(
        f"{path}/publish", json={"feedback": True, "scores": True}, headers=headers
    )
    assert published.status_code == 200
    assert published.json()["feedback_published_at"] and published.json()["scores_published_at"]
    assert course.api.delete(path, headers=headers).status_code == 204
    assert course.api.get(path, headers=headers).status_code == 404
    assert course.api.delete(path, headers=headers).status_code == 404


def test_admin_acts_as_instructor(course: Course) -> None:
    response = course.api.post(
        course.base, json=assignment_body(), headers=course.people.headers("admin")
    )
    assert response.status_code == 201


def test_a_problem_without_points_takes_the_courses_default(course: Course) -> None:
    """Issue 39: a problem added without points was worth one point."""
    created = course.create(problems=[{"problem_id": PROBLEM}])
    assert created["problems"][0]["points"] == 10
    staff = course.people.headers("instructor")
    path = f"/api/courses/{course.id}"
    changed = course.api.patch(path, json={"default_points": 4}, headers=staff)
    assert changed.status_code == 200 and changed.json()["default_points"] == 4
    student_view = course.api.get(path, headers=course.people.headers("student")).json()
    assert student_view["default_points"] is None
    assert course.api.patch(path, json={"default_points": 4},
                            headers=course.people.headers("ta")).status_code == 403  # fmt: skip
    again = course.create(problems=[{"problem_id": PROBLEM}])
    assert again["problems"][0]["points"] == 4
    kept = course.create(problems=[{"problem_id": PROBLEM, "points": 1}])
    assert kept["problems"][0]["points"] == 1


def test_an_assignment_without_a_policy_shows_a_summary(course: Course) -> None:
    """Issue 39: hidden cases stay hidden unless the instructor chooses otherwise (as the form
    and a deep-linked problem already did): a student reads a summary."""
    created = course.create()
    assert created["feedback"] == "summary"
    body = course.submit(created["id"], WRONG, wait=25).json()
    assert body["view"] == "summary" and body["hidden_total"], body
    assert not [t for t in body["tests"] if t["visibility"] == "hidden"]
