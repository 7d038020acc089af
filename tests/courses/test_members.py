"""The roster one person at a time: listing with filters, sections, adding, changing, removing,
the last-instructor guard and password links for students."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.accounts import find_by_email, redeem_reset_link
from app.auth.models import PasswordReset
from app.courses.models import Membership
from tests.courses.conftest import error_of, snapshot
from tests.support.people import People


def _members(client: TestClient, people: People, query: str = "") -> dict[str, Any]:
    url = f"/api/courses/{people.courses['course']}/members{query}"
    response = client.get(url, headers=people.headers("ta"))
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _emails(page: dict[str, Any]) -> list[str]:
    return [m["email"] for m in page["items"]]


def test_the_roster_filters_by_role_section_status_and_search(
    client: TestClient, people: People
) -> None:
    everyone = _members(client, people)
    assert everyone["total"] == 4
    assert _emails(_members(client, people, "?role=student")) == [
        "student@example.edu",
        "student_b@example.edu",
    ]
    assert _emails(_members(client, people, "?section=A")) == ["student@example.edu"]
    assert _emails(_members(client, people, "?section=")) == [
        "instructor@example.edu",
        "ta@example.edu",
    ]
    assert _emails(_members(client, people, "?q=B")) == ["student_b@example.edu"]
    # "_" is a character to find, not a wildcard.
    assert _emails(_members(client, people, "?q=t_b")) == ["student_b@example.edu"]
    assert _emails(_members(client, people, "?q=t_")) == ["student_b@example.edu"]
    page = _members(client, people, "?limit=2&offset=2")
    assert (page["total"], len(page["items"])) == (4, 2)
    client.delete(
        f"/api/courses/{people.courses['course']}/members/{people.users['student']}",
        headers=people.headers("instructor"),
    )
    assert _emails(_members(client, people, "?status=removed")) == ["student@example.edu"]
    url = f"/api/courses/{people.courses['course']}/members"
    for query in ("?role=admin", "?status=gone", "?limit=501", "?offset=-1"):
        response = client.get(url + query, headers=people.headers("ta"))
        assert response.status_code == 422, query
        error_of(response)


def test_sections_with_counts(client: TestClient, people: People) -> None:
    course = people.courses["course"]
    client.patch(
        f"/api/courses/{course}/members/{people.users['student_b']}",
        json={"section": "A"},
        headers=people.headers("instructor"),
    )
    response = client.get(f"/api/courses/{course}/sections", headers=people.headers("ta"))
    assert response.json() == {
        "sections": [
            {"name": "A", "students": 2, "members": 2},
            {"name": None, "students": 0, "members": 2},
        ]
    }


def test_adding_one_person(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    url = f"/api/courses/{people.courses['course']}/members"
    teach = people.headers("instructor")
    new = client.post(
        url,
        json={"email": " Ada@Example.EDU ", "name": "Ada", "section": " C ", "role": "ta"},
        headers=teach,
    )
    assert new.status_code == 201, new.text
    assert new.json() | {"user_id": 0, "joined_at": ""} == {
        "user_id": 0,
        "email": "ada@example.edu",
        "name": "Ada",
        "role": "ta",
        "section": "C",
        "status": "active",
        "has_password": False,
        "joined_at": "",
        "invitation": "none",
        "invited_at": None,
    }
    existing = client.post(
        url, json={"email": "other_student@example.edu", "name": "X"}, headers=teach
    )
    assert existing.status_code == 201
    assert existing.json()["user_id"] == people.users["other_student"]
    assert existing.json()["name"] == "Other Student"  # an account keeps its own name
    with sessions() as session:
        assert find_by_email(session, "ada@example.edu") is not None

    before = snapshot(sessions)
    for body, status, code, field in (
        ({"email": "ADA@example.edu", "name": "Ada"}, 409, "already_member", "email"),
        ({"email": "student@example.edu"}, 409, "already_member", "email"),
        ({"email": "not-an-email", "name": "N"}, 422, "invalid_request", "email"),
        ({"email": "n@example.edu", "role": "admin"}, 422, "invalid_request", "role"),
        ({"email": "n@example.edu", "section": "s" * 65}, 422, "invalid_request", "section"),
        ({"email": "n@example.edu", "status": "active"}, 422, "invalid_request", "status"),
    ):
        response = client.post(url, json=body, headers=teach)
        assert response.status_code == status, (body, response.text)
        assert (error_of(response)["code"], error_of(response)["field"]) == (code, field)
    assert snapshot(sessions) == before


def test_changing_and_removing_members(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    course = people.courses["course"]
    teach = people.headers("instructor")
    student = f"/api/courses/{course}/members/{people.users['student']}"
    moved = client.patch(student, json={"section": "B", "role": "ta"}, headers=teach).json()
    assert (moved["section"], moved["role"]) == ("B", "ta")
    cleared = client.patch(student, json={"section": "", "role": "student"}, headers=teach).json()
    assert (cleared["section"], cleared["role"]) == (None, "student")
    removed = client.delete(student, headers=teach)
    assert removed.json()["status"] == "removed"
    with sessions() as session:  # the row (and so their history) stays
        row = session.scalars(
            select(Membership).where(Membership.user_id == people.users["student"])
        ).one()
        assert row.status == "removed"

    before = snapshot(sessions)
    missing = client.patch(
        f"/api/courses/{course}/members/{people.users['other_student']}",
        json={"section": "A"},
        headers=teach,
    )
    assert missing.status_code == 404
    assert error_of(missing)["code"] == "member_not_found"
    bad = client.patch(student, json={"status": "expelled"}, headers=teach)
    assert bad.status_code == 422
    assert snapshot(sessions) == before


def test_the_last_instructor_cannot_be_demoted_or_removed(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    course = people.courses["course"]
    teach = people.headers("instructor")
    me = f"/api/courses/{course}/members/{people.users['instructor']}"
    before = snapshot(sessions)
    for method, body in (
        ("PATCH", {"role": "ta"}),
        ("PATCH", {"status": "blocked"}),
        ("PATCH", {"status": "removed"}),
        ("DELETE", None),
    ):
        response = client.request(method, me, json=body, headers=teach)
        assert response.status_code == 409, (method, body)
        assert error_of(response)["code"] == "last_instructor"
    # Even an admin cannot leave the course without one.
    response = client.delete(me, headers=people.headers("admin"))
    assert response.status_code == 409
    assert snapshot(sessions) == before
    # With a second instructor, the first may step down.
    promoted = client.patch(
        f"/api/courses/{course}/members/{people.users['ta']}",
        json={"role": "instructor"},
        headers=teach,
    )
    assert promoted.status_code == 200
    assert client.patch(me, json={"role": "ta"}, headers=teach).json()["role"] == "ta"
    # ... and, now a TA, may no longer change the roster.
    again = client.patch(me, json={"role": "instructor"}, headers=teach)
    assert again.status_code == 403


def _resets(sessions: sessionmaker[Session]) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(PasswordReset)) or 0


def test_a_reset_link_for_a_student_of_the_course_only(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    course = people.courses["course"]
    other = people.courses["other_course"]
    teach = people.headers("instructor")

    def link(user: str, headers: dict[str, str] = teach, course_id: int = course) -> Any:
        return client.post(
            f"/api/courses/{course_id}/members/{people.users[user]}/reset-link", headers=headers
        )

    # A student whose account the course's enrolment made, never used (the roster's way).
    fresh = client.post(
        f"/api/courses/{course}/members", json={"email": "fresh@example.edu"}, headers=teach
    ).json()["user_id"]
    made = client.post(f"/api/courses/{course}/members/{fresh}/reset-link", headers=teach)
    assert made.status_code == 201, made.text
    path = made.json()["path"]
    assert path.startswith("/reset/")
    assert made.json()["url"].endswith(path)
    with sessions() as session:
        owner = redeem_reset_link(session, path.removeprefix("/reset/"))
        assert owner is not None and owner.id == fresh
        session.commit()
        assert redeem_reset_link(session, path.removeprefix("/reset/")) is None  # one use

    # A student who is a TA elsewhere: their account reaches another course's students.
    client.post(
        f"/api/courses/{other}/members",
        json={"email": "student_b@example.edu", "role": "ta"},
        headers=people.headers("other_instructor"),
    )
    client.delete(f"/api/courses/{course}/members/{people.users['student']}", headers=teach)
    count = _resets(sessions)
    for who, status, code in (
        ("ta", 403, "not_a_student"),
        ("instructor", 403, "not_a_student"),
        ("student_b", 403, "not_this_courses_account"),  # a TA elsewhere
        ("student", 403, "not_a_student"),  # removed
        ("other_student", 404, "member_not_found"),  # not in this course
        ("outsider", 404, "member_not_found"),
    ):
        response = link(who)
        assert response.status_code == status, (who, response.text)
        assert error_of(response)["code"] == code
    assert link("student", people.headers("ta")).status_code == 403
    assert link("other_student", teach, other).status_code == 404  # not their course
    assert _resets(sessions) == count
