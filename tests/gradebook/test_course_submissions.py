"""A course's staff list its submissions (the instructors' list, scoped to the course's
assignments) and its instructors regrade the matching ones; no one else sees them."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from tests.gradebook.factories import make_assignment
from tests.gradebook.test_regrade import attach, grade, wait_done
from tests.support.codes import CORRECT, WRONG
from tests.support.people import People


def test_course_staff_list_and_regrade_their_course_only(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    course = people.courses["course"]
    a = make_assignment(sessions, course, due_at=utcnow().replace(year=2100))
    right = grade(api, people, "student", CORRECT)
    wrong = grade(api, people, "student_b", WRONG)
    practice = grade(api, people, "student", WRONG)  # stays practice: not the course's
    attach(sessions, a, people.users["student"], right, 1)
    attach(sessions, a, people.users["student_b"], wrong, 1)
    url = f"/api/courses/{course}/submissions"

    listed = api.get(url, headers=people.headers("ta"))
    assert listed.status_code == 200, listed.text
    rows = listed.json()["items"]
    assert [r["id"] for r in rows] == [wrong, right]  # newest first; no practice
    assert {r["assignment_id"] for r in rows} == {a}
    assert practice not in {r["id"] for r in rows}
    only = api.get(url, params={"diagnosis": "missing-wo"}, headers=people.headers("ta"))
    assert [r["id"] for r in only.json()["items"]] == [wrong]
    # The catalog's list of practice has none of the course's work.
    catalog = api.get("/api/submissions", headers=people.headers("instructor")).json()["items"]
    assert {right, wrong}.isdisjoint(r["id"] for r in catalog)

    # A student of the course, and staff of another course, see nothing of it.
    assert api.get(url, headers=people.headers("student")).status_code == 403
    assert api.get(url, headers=people.headers("outsider")).status_code == 404

    assert api.post(f"{url}/regrade", headers=people.headers("ta")).status_code == 403
    done = api.post(f"{url}/regrade", params={"verdict": "wrong_answer"},
                    headers=people.headers("instructor"))  # fmt: skip
    assert done.status_code == 202, done.text
    assert done.json() == {"matched": 1, "queued": 1, "skipped": 0, "queue_full": False}
    wait_done(sessions, [wrong])
    again = api.get(url, headers=people.headers("ta")).json()["items"]
    assert {r["id"]: r["run"] for r in again} == {wrong: 2, right: 1}
