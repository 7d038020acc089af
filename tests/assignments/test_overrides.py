"""Overrides: staff grant extensions, credit and attempts to a student, many, or a section."""

from __future__ import annotations

from sqlalchemy import update

from app.courses.models import Membership
from tests.assignments.conftest import Course, at, error_of


def test_extension_moves_a_students_own_due_date(course: Course) -> None:
    created = course.create(due_at=at(-1), max_attempts=2)
    path = f"{course.base}/{created['id']}"
    student = course.people.headers("student")
    assert course.api.get(path, headers=student).json()["mine"]["open"] is False
    granted = course.api.post(
        f"{path}/overrides",
        json={"user_id": course.people.users["student"], "until": at(5), "extra_attempts": 1},
        headers=course.people.headers("ta"),
    )
    assert granted.status_code == 201, granted.text
    mine = course.api.get(path, headers=student).json()["mine"]
    assert mine["open"] and mine["credit"] == 1.0 and mine["rule"].startswith("extension")
    assert mine["attempts_allowed"] == 3
    other = course.api.get(path, headers=course.people.headers("student_b")).json()["mine"]
    assert other["open"] is False and other["attempts_allowed"] == 2
    listed = course.api.get(f"{path}/overrides", headers=course.people.headers("instructor"))
    assert [o["id"] for o in listed.json()] == [granted.json()[0]["id"]]
    removed = course.api.delete(
        f"{path}/overrides/{granted.json()[0]['id']}", headers=course.people.headers("ta")
    )
    assert removed.status_code == 204
    assert course.api.get(path, headers=student).json()["mine"]["open"] is False


def test_section_override_applies_to_its_students_only(course: Course) -> None:
    created = course.create(due_at=at(-1))
    path = f"{course.base}/{created['id']}"
    response = course.api.post(
        f"{path}/overrides",
        json={"section": "B", "until": at(3), "credit": 0.7},
        headers=course.people.headers("instructor"),
    )
    assert response.status_code == 201, response.text
    b = course.api.get(path, headers=course.people.headers("student_b")).json()["mine"]
    assert b["open"] and b["credit"] == 0.7
    a = course.api.get(path, headers=course.people.headers("student")).json()["mine"]
    assert a["open"] is False


def test_bulk_extension_is_all_or_nothing(course: Course) -> None:
    created = course.create()
    path = f"{course.base}/{created['id']}/overrides"
    users = course.people.users
    headers = course.people.headers("instructor")
    refused = course.api.post(
        path,
        json={"user_ids": [users["student"], users["other_student"]], "until": at(48)},
        headers=headers,
    )
    assert refused.status_code == 422
    assert error_of(refused) | {"message": ""} == {
        "code": "not_enrolled", "message": "", "field": "user_ids[1]"
    }  # fmt: skip
    assert course.api.get(path, headers=headers).json() == []
    bulk = course.api.post(
        path,
        json={"user_ids": [users["student"], users["student_b"]], "until": at(48)},
        headers=headers,
    )
    assert bulk.status_code == 201
    assert sorted(o["user_id"] for o in bulk.json()) == sorted(
        [users["student"], users["student_b"]]
    )


def test_refusals(course: Course) -> None:
    created = course.create()
    path = f"{course.base}/{created['id']}/overrides"
    users = course.people.users
    headers = course.people.headers("instructor")
    for user in ("ta", "outsider", "other_student"):
        response = course.api.post(
            path, json={"user_id": users[user], "until": at(48)}, headers=headers
        )
        assert response.status_code == 422 and error_of(response)["code"] == "not_enrolled", user
    with course.api.app.state.sessions() as session:  # type: ignore[attr-defined]
        session.execute(
            update(Membership)
            .where(Membership.user_id == users["student_b"])
            .values(status="blocked")
        )
        session.commit()
    blocked = course.api.post(
        path, json={"user_id": users["student_b"], "until": at(48)}, headers=headers
    )
    assert error_of(blocked)["code"] == "not_enrolled"
    section = course.api.post(path, json={"section": "Z", "until": at(48)}, headers=headers)
    assert error_of(section)["code"] == "unknown_section"
    nothing = course.api.post(path, json={"user_id": users["student"]}, headers=headers)
    assert nothing.status_code == 422
    early = course.api.post(
        path, json={"user_id": users["student"], "until": at(1)}, headers=headers
    )
    assert error_of(early)["code"] == "extension_too_early"
    naive = course.api.post(
        path, json={"user_id": users["student"], "until": "2031-01-01T00:00:00"}, headers=headers
    )
    assert naive.status_code == 422
    assert course.api.get(path, headers=headers).json() == []
    student = course.people.headers("student")
    assert course.api.get(path, headers=student).status_code == 403
    assert (
        course.api.post(
            path, json={"user_id": users["student"], "until": at(48)}, headers=student
        ).status_code
        == 403
    )
    assert course.api.delete(f"{path}/1", headers=headers).status_code == 404


def test_an_extension_opens_only_its_own_assignment(course: Course) -> None:
    """Two closed assignments in one course: an extension on the first leaves the second
    closed for the same student."""
    extended, sibling = (course.create(title=t, due_at=at(-1), max_attempts=1) for t in "AB")
    granted = course.api.post(
        f"{course.base}/{extended['id']}/overrides",
        json={"user_id": course.people.users["student"], "until": at(5), "extra_attempts": 2},
        headers=course.people.headers("instructor"),
    )
    assert granted.status_code == 201, granted.text
    student = course.people.headers("student")
    mine = course.api.get(f"{course.base}/{extended['id']}", headers=student).json()["mine"]
    assert mine["open"] is True and mine["attempts_allowed"] == 3
    other = course.api.get(f"{course.base}/{sibling['id']}", headers=student).json()["mine"]
    assert other["open"] is False and other["attempts_allowed"] == 1
    refused = course.submit(sibling["id"], "def f():\n    return 1\n")
    assert refused.status_code == 409, refused.text
    assert error_of(refused)["code"] == "assignment_closed"
