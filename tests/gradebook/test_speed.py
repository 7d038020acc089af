"""The gradebook of a 300-student class on a 5-problem assignment (3000 graded attempts with
full-size reports) answers well under a second: one query for the attempts, one for the
latest reports, nothing per student."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from tests.gradebook.factories import seed_class
from tests.support.people import People

BUDGET_SECONDS = 1.0


def test_gradebook_of_300_students_is_fast(
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
    timings = {}
    for name in ("gradebook", "gradebook.csv", "attempts.csv", "canvas.csv", "insight"):
        statements.clear()
        r = api.get(f"{base}/{name}", headers=headers)
        assert r.status_code == 200
        # Authentication and membership, the assignment, its problems, students, overrides,
        # attempts, adjustments, latest reports (in chunks of 500), sections: never per student.
        assert len(statements) < 20, (name, [s[:70] for s in statements])
    event.remove(engine, "before_cursor_execute", count)
    # The best of three: the machine running the suite is shared, and the figure sought is
    # what the gradebook costs, not what other processes took meanwhile.
    for name in ("gradebook", "gradebook.csv", "attempts.csv", "canvas.csv", "insight"):
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            assert api.get(f"{base}/{name}", headers=headers).status_code == 200
            runs.append(time.perf_counter() - start)
        timings[name] = min(runs)
    print("gradebook timings (s):", {k: round(v, 3) for k, v in timings.items()})
    book = api.get(f"{base}/gradebook", headers=headers).json()
    assert len(book["students"]) == 303  # the class and the three seeded students
    assert all(t < BUDGET_SECONDS for t in timings.values()), timings
