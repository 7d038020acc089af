"""Courses do not trust each other: an instructor cannot take over an account through their
course's password links (issue 35). Each attack is run for real through the HTTP API, to the
end: enrol the victim by email, ask for her link, set her password, sign in as her.

What a course's staff may still do: give the first set-password link to an account that only
their course made (``POST /members``, the roster CSV) and that nobody has used yet.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.models import PasswordReset
from app.submissions.models import Submission
from tests.courses.conftest import error_of
from tests.gradebook.factories import MHA, T0, make_assignment
from tests.support.people import People

PASSWORD = "the attacker's password"


def _enrol(client: TestClient, people: People, email: str, course: str = "course") -> int:
    made = client.post(
        f"/api/courses/{people.courses[course]}/members",
        json={"email": email, "name": "Enrolled"},
        headers=people.headers("instructor" if course == "course" else "other_instructor"),
    )
    assert made.status_code == 201, made.text
    user_id: int = made.json()["user_id"]
    return user_id


def _link(client: TestClient, people: People, user_id: int, who: str = "instructor") -> Any:
    return client.post(
        f"/api/courses/{people.courses['course']}/members/{user_id}/reset-link",
        headers=people.headers(who),
    )


def _signed_in_as(client: TestClient, link: Any) -> int | None:
    """Redeems the link with a password of the caller's choosing in a browser of their own;
    the account that browser is then signed in as."""
    secret = link.json()["path"].removeprefix("/reset/")
    browser = TestClient(client.app)
    done = browser.post("/api/auth/reset", json={"secret": secret, "password": PASSWORD})
    assert done.status_code == 200, done.text
    me = browser.get("/api/auth/me").json()["user"]
    return None if me is None else int(me["id"])


def _resets(sessions: sessionmaker[Session], user_id: int) -> int:
    with sessions() as session:
        return (
            session.scalar(
                select(func.count())
                .select_from(PasswordReset)
                .where(PasswordReset.user_id == user_id)
            )
            or 0
        )


def _attack(
    client: TestClient, people: People, sessions: sessionmaker[Session], victim: int
) -> None:
    """Course X's instructor asks for the victim's link: refused, and nothing is issued. On
    the code before issue 35 the link came back and the instructor signed in as the victim."""
    response = _link(client, people, victim)
    if response.status_code == 201:
        took = _signed_in_as(client, response)
        raise AssertionError(f"the instructor took over account {took} (victim {victim})")
    assert response.status_code == 403, response.text
    assert error_of(response)["code"] == "not_this_courses_account"
    assert _resets(sessions, victim) == 0


def test_a_student_of_another_course_cannot_be_taken_over(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    """The reported attack: X's instructor enrols a student of Y by her email (the account is
    reused, as it should be) and asks for her password link."""
    victim = _enrol(client, people, "other_student@example.edu")
    assert victim == people.users["other_student"]
    _attack(client, people, sessions, victim)
    # Enrolling her was X's to do, and X still acts on what it owns: her place in X.
    moved = client.patch(
        f"/api/courses/{people.courses['course']}/members/{victim}",
        json={"section": "Z"},
        headers=people.headers("instructor"),
    )
    assert moved.status_code == 200 and moved.json()["section"] == "Z"
    # Her own course's instructor may not either: she has signed in (she holds a token).
    other = client.post(
        f"/api/courses/{people.courses['other_course']}/members/{victim}/reset-link",
        headers=people.headers("other_instructor"),
    )
    assert other.status_code == 403 and error_of(other)["code"] == "not_this_courses_account"
    # An administrator may.
    admin = _link(client, people, victim, "admin")
    assert admin.status_code == 201, admin.text
    assert _signed_in_as(client, admin) == victim


@pytest.mark.parametrize("kind", ["outsider", "admin_made", "left_other_course", "signed_in"])
def test_accounts_made_or_used_elsewhere_are_not_the_courses(
    client: TestClient, people: People, sessions: sessionmaker[Session], kind: str
) -> None:
    """Whoever else's the account is: in no course but used (``outsider`` holds a token), made
    by an administrator and never used, made by another course that has since removed her,
    or made by this course but already signed in with her own password."""
    email = f"{kind}@example.edu"
    if kind == "outsider":
        email = "outsider@example.edu"
    elif kind == "admin_made":
        made = client.post(
            "/api/admin/users",
            json={"email": email, "name": "Made by the admin"},
            headers=people.headers("admin"),
        )
        assert made.status_code == 201, made.text
    elif kind == "left_other_course":
        gone = _enrol(client, people, email, "other_course")
        removed = client.delete(
            f"/api/courses/{people.courses['other_course']}/members/{gone}",
            headers=people.headers("other_instructor"),
        )
        assert removed.status_code == 200
    victim = _enrol(client, people, email)
    if kind == "signed_in":
        first = _link(client, people, victim)
        assert first.status_code == 201, first.text  # the course made her: its first link
        assert _signed_in_as(client, first) == victim  # she set her password
    before = _resets(sessions, victim)
    response = _link(client, people, victim)
    assert response.status_code == 403, (kind, response.text)
    assert error_of(response)["code"] == "not_this_courses_account"
    assert _resets(sessions, victim) == before


def test_an_account_the_course_made_gets_its_first_link(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    """What roster import relies on: a person enrolled by a new email (one by one, or from the
    CSV) gets a link from the course's instructor, as often as needed until she uses one;
    never from a TA."""
    one = _enrol(client, people, "brand.new@example.edu")
    csv = "email,name\nfrom.csv@example.edu,From Csv\n"
    imported = client.post(
        f"/api/courses/{people.courses['course']}/roster",
        content=csv.encode(),
        headers={**people.headers("instructor"), "Content-Type": "text/csv"},
    )
    assert imported.status_code == 200 and imported.json()["created"] == 1, imported.text
    listed = client.get(
        f"/api/courses/{people.courses['course']}/members?q=from.csv",
        headers=people.headers("instructor"),
    ).json()["items"]
    two = listed[0]["user_id"]
    for user_id in (one, two):
        assert _link(client, people, user_id, "ta").status_code == 403
        lost = _link(client, people, user_id)
        assert lost.status_code == 201, lost.text
        again = _link(client, people, user_id)  # the first was lost: another one
        assert again.status_code == 201, again.text
        assert _signed_in_as(client, again) == user_id
    # Another course that enrols her later gets nothing, nor does hers now that she is in two.
    _enrol(client, people, "brand.new@example.edu", "other_course")
    elsewhere = client.post(
        f"/api/courses/{people.courses['other_course']}/members/{one}/reset-link",
        headers=people.headers("other_instructor"),
    )
    assert elsewhere.status_code == 403
    assert error_of(elsewhere)["code"] == "not_this_courses_account"


def _graded(client: TestClient, people: People, who: str) -> str:
    made = client.post(
        f"/api/problems/{MHA}/submissions?wait=30",
        json={"code": "def multi_head_attention(*args):\n    return 0\n"},
        headers=people.headers(who),
    )
    assert made.status_code == 200 and made.json()["status"] == "done", made.text
    submission_id: str = made.json()["id"]
    return submission_id


def _run_of(sessions: sessionmaker[Session], submission_id: str) -> int:
    with sessions() as session:
        row = session.get(Submission, submission_id)
        assert row is not None
        return row.run


def test_a_submission_is_regraded_by_its_own_courses_instructors(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    """Y's instructor regraded X's students' work given its id (any deployment instructor
    could). Now: the instructors of the course whose assignment holds it, or an admin;
    practice, which no course owns: the catalog's staff, as ``POST /api/regrades``."""
    other = make_assignment(sessions, people.courses["other_course"], due_at=T0.replace(year=2100))
    work = _graded(client, people, "other_student")
    with sessions() as session:
        row = session.get(Submission, work)
        assert row is not None
        row.user_id, row.assignment_id, row.graded_attempt = people.users["other_student"], other, 1
        session.commit()
    for who in ("instructor", "ta", "student", "outsider"):
        response = client.post(f"/api/submissions/{work}/regrade", headers=people.headers(who))
        assert response.status_code == 404, (who, response.text)
        assert _run_of(sessions, work) == 1, f"{who} regraded another course's submission"
    mine = client.post(
        f"/api/submissions/{work}/regrade", headers=people.headers("other_instructor")
    )
    assert mine.status_code == 202, mine.text
    assert _run_of(sessions, work) == 2

    practice = _graded(client, people, "other_student")
    refused = client.post(f"/api/submissions/{practice}/regrade", headers=people.headers("ta"))
    assert refused.status_code == 404 and _run_of(sessions, practice) == 1
    catalog = client.post(
        f"/api/submissions/{practice}/regrade", headers=people.headers("instructor")
    )
    assert catalog.status_code == 202, catalog.text
