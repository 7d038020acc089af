"""The gradebook of a 300-student class on a 5-problem assignment (3000 graded attempts with
full-size reports) costs a fixed number of queries: one for the attempts, one for the latest
reports, nothing per student. Its time is `make bench-deadline`'s figure, not an assertion
here: the suite shares its cores with parallel workers."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from tests.gradebook.factories import seed_class
from tests.support.people import People


def test_gradebook_of_300_students_costs_no_query_per_student(
    api: TestClient, sessions: sessionmaker[Session], people: People
) -> None:
    a, _ = seed_class(sessions, people.courses["course"], 300)
    base = f"/api/courses/{people.courses['course']}/assignments/{a}"
    headers = people.headers("ta")
    statements: list[str] = []
    engine = sessions.kw["bind"]

    def count(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if "AS cand" not in statement:  # the idle embedded workers polling the queue
            statements.append(statement)

    api.get(f"{base}/gradebook", headers=headers)  # warm: statement caches, imports
    event.listen(engine, "before_cursor_execute", count)
    for name in ("gradebook", "gradebook.csv", "attempts.csv", "canvas.csv", "insight"):
        statements.clear()
        r = api.get(f"{base}/{name}", headers=headers)
        assert r.status_code == 200
        # Authentication and membership, the assignment, its problems, students, overrides,
        # attempts, adjustments, latest reports (in chunks of 500), sections: never per student.
        assert len(statements) < 20, (name, [s[:70] for s in statements])
    event.remove(engine, "before_cursor_execute", count)
    book = api.get(f"{base}/gradebook", headers=headers).json()
    assert len(book["students"]) == 303  # the class and the three seeded students
