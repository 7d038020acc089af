"""Every gradebook route × every kind of caller. Students read only their own scores; another
course's people and outsiders cannot tell the course exists (404); TAs and instructors of the
course read everything and adjust scores; only instructors (and admins) regrade."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from tests.gradebook.factories import MHA, T0, add_attempt, make_assignment
from tests.instructors.conftest import make_settings
from tests.support.people import People

WHO = ("anonymous", "outsider", "student", "other_student", "other_instructor", "ta",
       "instructor", "admin")  # fmt: skip
STAFF_READS = (
    "gradebook", "gradebook.csv", "attempts.csv", "canvas.csv", "students/{student}",
    "adjustments", "insight",
)  # fmt: skip
# Not in the course: the course does not exist for them.
HIDDEN = {"anonymous": 401, "outsider": 404, "other_student": 404, "other_instructor": 404}


def expected(route: str, who: str) -> int:
    if who in HIDDEN:
        return HIDDEN[who]
    if route == "grades/me":
        return 200
    if route == "POST regrade":
        return 202 if who in ("instructor", "admin") else 403
    if who == "student":
        return 403
    return 201 if route == "POST adjustments" else 200


ROUTES = ("grades/me", *STAFF_READS, "POST adjustments", "POST regrade")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One app for the whole matrix (it only reads, and each write is its own row)."""
    from tests.support.people import seed_people

    settings = make_settings(tmp_path_factory.mktemp("access") / "data")
    with TestClient(create_app(settings)) as api:
        sessions: sessionmaker[Session] = api.app.state.sessions  # type: ignore[attr-defined]
        people = seed_people(sessions)
        a = make_assignment(sessions, people.courses["course"])
        add_attempt(sessions, a, people.users["student"], MHA, 1, T0, 1.0)
        other = make_assignment(sessions, people.courses["other_course"])
        yield api, people, a, other


def call(api: TestClient, people: People, course: int, a: int, route: str, who: str):  # type: ignore[no-untyped-def]
    path = f"/api/courses/{course}/assignments/{a}/"
    headers = people.headers(who)
    if route == "POST adjustments":
        body = {"user_id": people.users["student"], "problem_id": MHA, "score": 5,
                "comment": f"by {who}"}  # fmt: skip
        return api.post(path + "adjustments", json=body, headers=headers)
    if route == "POST regrade":
        return api.post(path + "regrade", headers=headers)
    return api.get(path + route.format(student=people.users["student"]), headers=headers)


@pytest.mark.parametrize("who", WHO)
@pytest.mark.parametrize("route", ROUTES)
def test_matrix(world, route: str, who: str) -> None:  # type: ignore[no-untyped-def]
    api, people, a, _ = world
    r = call(api, people, people.courses["course"], a, route, who)
    assert r.status_code == expected(route, who), (route, who, r.text)
    if r.status_code >= 400:
        assert set(r.json()) == {"error"}


@pytest.mark.parametrize("route", ROUTES)
def test_another_courses_assignment_is_not_found_through_this_course(world, route: str) -> None:  # type: ignore[no-untyped-def]
    api, people, _, other = world
    r = call(api, people, people.courses["course"], other, route, "instructor")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "assignment_not_found")


def test_staff_see_a_student_of_the_course_only(world) -> None:  # type: ignore[no-untyped-def]
    api, people, a, _ = world
    base = f"/api/courses/{people.courses['course']}/assignments/{a}/students"
    for who in ("ta", "other_student", "instructor"):
        r = api.get(f"{base}/{people.users[who]}", headers=people.headers("ta"))
        assert (r.status_code, r.json()["error"]["code"]) == (404, "student_not_found")


def test_blocked_student_cannot_read_own_grades(world) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import update

    from app.courses.models import Membership

    api, people, a, _ = world
    sessions = api.app.state.sessions
    with sessions() as session:
        session.execute(
            update(Membership)
            .where(Membership.user_id == people.users["student_b"])
            .values(status="blocked")
        )
        session.commit()
    url = f"/api/courses/{people.courses['course']}/assignments/{a}/grades/me"
    r = api.get(url, headers=people.headers("student_b"))
    assert (r.status_code, r.json()["error"]["code"]) == (403, "membership_inactive")
