"""Courses: creating, listing, changing, archiving, and joining by code."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.courses.models import Membership
from tests.courses.conftest import error_of, snapshot
from tests.support.people import People


def _course(client: TestClient, people: People, who: str, course_id: int) -> dict:  # type: ignore[type-arg]
    response = client.get(f"/api/courses/{course_id}", headers=people.headers(who))
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_an_instructor_creates_a_course_and_teaches_it(client: TestClient, people: People) -> None:
    created = client.post(
        "/api/courses", json={"title": "  Deep learning  "}, headers=people.headers("instructor")
    )
    assert created.status_code == 201, created.text
    course = created.json()
    assert course["title"] == "Deep learning"
    assert course["role"] == "instructor"
    assert course["members"] == 1
    assert len(course["join_code"]) == 10
    mine = client.get("/api/courses", headers=people.headers("instructor")).json()
    assert {c["id"]: c["role"] for c in mine["items"]} == {
        people.courses["course"]: "instructor",
        course["id"]: "instructor",
    }
    # Nobody else sees it.
    hidden = client.get(f"/api/courses/{course['id']}", headers=people.headers("ta"))
    assert hidden.status_code == 404


def test_bad_course_bodies_change_nothing(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    before = snapshot(sessions)
    for body, status, field in (
        ({"title": ""}, 422, "title"),
        ({"title": "   "}, 422, "title"),
        ({"title": "x" * 201}, 422, "title"),
        ({"title": "ok", "owner": 3}, 422, "owner"),
        ({}, 422, "title"),
        ([], 422, None),
    ):
        response = client.post("/api/courses", json=body, headers=people.headers("instructor"))
        assert response.status_code == status, (body, response.text)
        assert error_of(response)["field"] == field, body
    response = client.post(
        "/api/courses", content=b"{not json", headers=people.headers("instructor")
    )
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_json"
    url = f"/api/courses/{people.courses['course']}"
    for body in ({"title": ""}, {"joining_open": "maybe"}, {"code": "X"}):
        response = client.patch(url, json=body, headers=people.headers("instructor"))
        assert response.status_code == 422, body
    assert snapshot(sessions) == before


def test_the_list_shows_active_places_only_and_admins_see_everything_in_pages(
    client: TestClient, people: People
) -> None:
    course = people.courses["course"]
    listed = client.get("/api/courses", headers=people.headers("student")).json()
    assert [(c["id"], c["role"], c["section"], c["join_code"]) for c in listed["items"]] == [
        (course, "student", "A", None)
    ]
    removed = client.delete(
        f"/api/courses/{course}/members/{people.users['student']}",
        headers=people.headers("instructor"),
    )
    assert removed.status_code == 200
    assert client.get("/api/courses", headers=people.headers("student")).json()["total"] == 0
    assert client.get("/api/courses", headers=people.headers("outsider")).json()["items"] == []

    first = client.get("/api/courses?limit=1", headers=people.headers("admin")).json()
    second = client.get("/api/courses?limit=1&offset=1", headers=people.headers("admin")).json()
    assert first["total"] == second["total"] == 2
    assert [c["id"] for c in first["items"] + second["items"]] == sorted(people.courses.values())
    assert client.get("/api/courses?limit=0", headers=people.headers("admin")).status_code == 422


def test_a_person_is_a_student_in_one_course_and_a_ta_in_another(
    client: TestClient, people: People
) -> None:
    other = people.courses["other_course"]
    course = people.courses["course"]
    added = client.post(
        f"/api/courses/{other}/members",
        json={"email": "STUDENT@example.edu", "name": "ignored", "role": "ta"},
        headers=people.headers("other_instructor"),
    )
    assert added.status_code == 201, added.text
    assert added.json()["user_id"] == people.users["student"]  # the same account, no new one
    roles = {
        c["id"]: c["role"]
        for c in client.get("/api/courses", headers=people.headers("student")).json()["items"]
    }
    assert roles == {course: "student", other: "ta"}
    who = people.headers("student")
    assert client.get(f"/api/courses/{other}/members", headers=who).status_code == 200
    assert client.get(f"/api/courses/{course}/members", headers=who).status_code == 403
    assert _course(client, people, "student", other)["join_code"] == "JOIN-OTHER_COURSE"
    assert _course(client, people, "student", course)["join_code"] is None


def test_rotating_closing_and_reopening_the_join_code(client: TestClient, people: People) -> None:
    url = f"/api/courses/{people.courses['course']}"
    teach = people.headers("instructor")
    rotated = client.patch(url, json={"rotate_code": True}, headers=teach).json()
    code = rotated["join_code"]
    assert code not in (None, "JOIN-COURSE")
    join = "/api/courses/join"
    refused = client.post(join, json={"code": "JOIN-COURSE"}, headers=people.headers("outsider"))
    assert refused.status_code == 404
    assert error_of(refused)["code"] == "join_code_not_found"
    closed = client.patch(url, json={"joining_open": False, "title": "Renamed"}, headers=teach)
    assert closed.json()["join_code"] is None
    assert closed.json()["title"] == "Renamed"
    late = client.post(join, json={"code": code}, headers=people.headers("outsider"))
    assert late.status_code == 404
    reopened = client.patch(url, json={"joining_open": True}, headers=teach).json()["join_code"]
    assert reopened not in (None, code)
    joined = client.post(join, json={"code": reopened.lower()}, headers=people.headers("outsider"))
    assert joined.status_code == 200
    assert joined.json()["course"]["title"] == "Renamed"


def test_archiving_keeps_the_roster_and_closes_joining(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    course = people.courses["course"]
    url = f"/api/courses/{course}"
    teach = people.headers("instructor")
    archived = client.delete(url, headers=teach)
    assert archived.status_code == 200
    assert archived.json()["archived_at"] is not None
    assert archived.json()["join_code"] is None
    with sessions() as session:
        kept = session.scalars(select(Membership).where(Membership.course_id == course)).all()
        assert len(kept) == 4
    # Students still find their archived course (its grades stay readable).
    assert _course(client, people, "student", course)["archived_at"] is not None
    refused = client.patch(url, json={"joining_open": True}, headers=teach)
    assert refused.status_code == 409
    assert error_of(refused)["code"] == "course_archived"
    restored = client.patch(url, json={"archived": False, "joining_open": True}, headers=teach)
    assert restored.status_code == 200
    assert restored.json()["archived_at"] is None
    assert restored.json()["join_code"] is not None


def test_joining_by_code_is_idempotent(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    join = "/api/courses/join"
    first = client.post(join, json={"code": " join-course "}, headers=people.headers("outsider"))
    assert first.status_code == 200, first.text
    assert first.json()["joined"] is True
    assert first.json()["course"]["role"] == "student"
    before = snapshot(sessions)
    again = client.post(join, json={"code": "JOIN-COURSE"}, headers=people.headers("outsider"))
    assert again.status_code == 200
    assert again.json()["joined"] is False
    # Staff who follow their own course's link stay staff.
    ta = client.post(join, json={"code": "JOIN-COURSE"}, headers=people.headers("ta"))
    assert (ta.json()["joined"], ta.json()["course"]["role"]) == (False, "ta")
    assert snapshot(sessions) == before


def test_joining_refuses_bad_codes_and_inactive_members(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    course = people.courses["course"]
    teach = people.headers("instructor")
    client.patch(
        f"/api/courses/{course}/members/{people.users['student']}",
        json={"status": "blocked"},
        headers=teach,
    )
    client.delete(f"/api/courses/{course}/members/{people.users['student_b']}", headers=teach)
    before = snapshot(sessions)
    join = "/api/courses/join"
    for who, body, status, code in (
        ("student", {"code": "JOIN-COURSE"}, 403, "membership_inactive"),
        ("student_b", {"code": "JOIN-COURSE"}, 403, "membership_inactive"),
        ("outsider", {"code": "NOPE"}, 404, "join_code_not_found"),
        ("outsider", {"code": ""}, 422, "invalid_request"),
        ("outsider", {"code": "x" * 65}, 422, "invalid_request"),
        ("outsider", {}, 422, "invalid_request"),
        ("anonymous", {"code": "JOIN-COURSE"}, 401, "unauthenticated"),
    ):
        response = client.post(join, json=body, headers=people.headers(who))
        assert response.status_code == status, (who, body, response.text)
        assert error_of(response)["code"] == code
    assert snapshot(sessions) == before


def test_a_removed_or_blocked_students_token_is_refused_on_the_course(
    client: TestClient, people: People
) -> None:
    course = people.courses["course"]
    teach = people.headers("instructor")
    assert _course(client, people, "student", course)["role"] == "student"
    client.delete(f"/api/courses/{course}/members/{people.users['student']}", headers=teach)
    client.patch(
        f"/api/courses/{course}/members/{people.users['student_b']}",
        json={"status": "blocked"},
        headers=teach,
    )
    client.delete(f"/api/courses/{course}/members/{people.users['ta']}", headers=teach)
    for who, status in (("student", "removed"), ("student_b", "blocked"), ("ta", "removed")):
        for path in ("", "/members", "/sections"):
            response = client.get(f"/api/courses/{course}{path}", headers=people.headers(who))
            assert response.status_code == 403, (who, path)
            error = error_of(response)
            assert error["code"] == "membership_inactive"
            assert status in error["message"]
    # Nor can they change anything a member could.
    response = client.post(
        "/api/courses/join", json={"code": "JOIN-COURSE"}, headers=people.headers("ta")
    )
    assert response.status_code == 403
    # Reinstated: the same token works again.
    client.patch(
        f"/api/courses/{course}/members/{people.users['student']}",
        json={"status": "active"},
        headers=teach,
    )
    assert _course(client, people, "student", course)["role"] == "student"
