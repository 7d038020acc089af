"""Who may call each courses route: every route x {anonymous, outsider, student of this course,
student of the other course, TA, instructor, admin}. A route of app/courses/routes.py missing
from the matrix fails ``test_every_route_is_in_the_matrix``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.courses import routes as course_routes
from tests.courses.conftest import error_of
from tests.support.people import People

CALLERS = ("anonymous", "outsider", "student", "other_student", "ta", "instructor", "admin")


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # {course}, {student}, {student_b} filled from People
    expected: tuple[int, ...]  # in the order of CALLERS
    body: Any = None
    csv: bool = False

    def url(self, people: People) -> str:
        return self.path.format(
            course=people.courses["course"],
            student=people.users["student"],
            student_b=people.users["student_b"],
        )


# In the order of CALLERS: anonymous, outsider, student, other_student, ta, instructor, admin.
# A course is invisible (404) to whoever is not in it; a member without the role gets 403.
MEMBER = (401, 404, 200, 404, 200, 200, 200)
STAFF = (401, 404, 403, 404, 200, 200, 200)
INSTRUCTOR = (401, 404, 403, 404, 403, 200, 200)
INSTRUCTOR_CREATES = (401, 404, 403, 404, 403, 201, 201)

MATRIX: dict[tuple[str, str], Case] = {
    (c.method, c.path.split("?")[0]): c
    for c in (
        Case("POST", "/api/courses", (401, 403, 403, 403, 403, 201, 201), {"title": "New"}),
        Case("GET", "/api/courses", (401, 200, 200, 200, 200, 200, 200)),
        Case("POST", "/api/courses/join", (401, *[200] * 6), {"code": "JOIN-COURSE"}),
        Case("GET", "/api/courses/{course}", MEMBER),
        Case("PATCH", "/api/courses/{course}", INSTRUCTOR, {"title": "Renamed"}),
        Case("DELETE", "/api/courses/{course}", INSTRUCTOR),
        Case("GET", "/api/courses/{course}/members", STAFF),
        Case("GET", "/api/courses/{course}/sections", STAFF),
        Case("POST", "/api/courses/{course}/members", INSTRUCTOR_CREATES, {"role": "student"}),
        Case("PATCH", "/api/courses/{course}/members/{student}", INSTRUCTOR, {"section": "C"}),
        Case("DELETE", "/api/courses/{course}/members/{student_b}", INSTRUCTOR),
        # The student has used her account (she holds a token): her password is hers or an
        # admin's (a brand-new account's first link: tests/courses/test_tenancy.py).
        Case(
            "POST",
            "/api/courses/{course}/members/{student}/reset-link",
            (401, 404, 403, 404, 403, 403, 201),
        ),
        Case("POST", "/api/courses/{course}/roster", INSTRUCTOR, csv=True),
    )
}

TEMPLATE = {
    "/api/courses/{course}": "/api/courses/{course_id}",
    "/api/courses/{course}/members": "/api/courses/{course_id}/members",
    "/api/courses/{course}/sections": "/api/courses/{course_id}/sections",
    "/api/courses/{course}/members/{student}": "/api/courses/{course_id}/members/{user_id}",
    "/api/courses/{course}/members/{student_b}": "/api/courses/{course_id}/members/{user_id}",
    "/api/courses/{course}/members/{student}/reset-link": (
        "/api/courses/{course_id}/members/{user_id}/reset-link"
    ),
    "/api/courses/{course}/roster": "/api/courses/{course_id}/roster",
}


def test_every_route_is_in_the_matrix() -> None:
    routes = {
        (method, route.path_format)
        for route in course_routes.router.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    covered = {(method, TEMPLATE.get(path, path)) for method, path in MATRIX}
    assert routes == covered


def _call(client: TestClient, people: People, case: Case, who: str) -> Any:
    headers = people.headers(who)
    url = case.url(people)
    if case.csv:
        # A different new person per caller, so a second allowed upload is not a no-op.
        text = f"email,name,section\nnew-{who}@example.edu,New {who},Z\n"
        headers = {**headers, "Content-Type": "text/csv"}
        return client.request(case.method, url, content=text.encode(), headers=headers)
    body = case.body
    if case.path.endswith("/members") and case.method == "POST":
        body = {**body, "email": f"new-{who}@example.edu", "name": f"New {who}"}
    return client.request(case.method, url, json=body, headers=headers)


@pytest.mark.parametrize("key", list(MATRIX), ids=[f"{m} {p}" for m, p in MATRIX])
def test_who_may_call(client: TestClient, people: People, key: tuple[str, str]) -> None:
    case = MATRIX[key]
    got = {}
    for who in CALLERS:
        response = _call(client, people, case, who)
        got[who] = response.status_code
        if response.status_code >= 400:
            error_of(response)  # every refusal in the one error shape
            if response.status_code == 401:
                assert response.headers["www-authenticate"].startswith("Bearer")
    assert got == dict(zip(CALLERS, case.expected, strict=True))
