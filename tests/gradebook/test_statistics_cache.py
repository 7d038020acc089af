"""Statistics are computed once per state of their inputs (app/gradebook/statistics_cache.py):
a read with nothing changed reads no report, and every change that moves a figure shows on
the next read: a graded attempt, an adjustment, a policy change, a roster change, an attempt
aging out of the week, a regrade."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

import app.gradebook.service as gradebook_service
from app.db.base import utcnow
from tests.gradebook.factories import MHA, add_attempt, make_assignment
from tests.gradebook.test_regrade import wait_done
from tests.support.codes import WRONG
from tests.support.people import People

HOUR = timedelta(hours=1)


@contextmanager
def statements(sessions: sessionmaker[Session]) -> Iterator[list[str]]:
    engine = sessions.kw["bind"]
    seen: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


class Stats:
    def __init__(self, api: TestClient, people: People, assignment: int) -> None:
        self.api, self.people = api, people
        self.url = f"/api/courses/{people.courses['course']}/assignments/{assignment}"

    def read(self, section: str | None = None) -> dict[str, Any]:
        params = {"section": section} if section else None
        r = self.api.get(f"{self.url}/statistics", params=params, headers=self.people.headers("ta"))
        assert r.status_code == 200, r.text
        found: dict[str, Any] = r.json()["problems"][0]
        return found


def test_each_change_shows_and_nothing_else_recomputes(
    api: TestClient,
    sessions: sessionmaker[Session],
    people: People,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = utcnow()
    course = people.courses["course"]
    a = make_assignment(
        sessions, course, [(MHA, 10.0)], release_at=now - 48 * HOUR, due_at=now + 48 * HOUR
    )
    s, b = people.users["student"], people.users["student_b"]
    add_attempt(sessions, a, s, MHA, 1, now - 2 * HOUR, 0.4, codes=["no-scale"])
    add_attempt(sessions, a, b, MHA, 1, now - 2 * HOUR, 1.0)
    stats = Stats(api, people, a)
    first = stats.read()
    assert (first["graded"], first["accepted"], first["histogram"][4]) == (2, 1, 1)

    # Nothing changed: the same figures, and no report read for them.
    with statements(sessions) as seen:
        assert stats.read() == first
    assert not [q for q in seen if "submissions.report" in q], seen

    # A graded attempt.
    add_attempt(sessions, a, s, MHA, 2, now - HOUR, 1.0)
    graded = stats.read()
    assert (graded["accepted"], graded["histogram"][9]) == (2, 2)
    assert graded["attempts_until_accepted"] == {"1": 1, "2": 1}

    # An adjustment.
    r = api.post(
        f"{stats.url}/adjustments",
        json={"user_id": b, "problem_id": MHA, "score": 2.5, "comment": "copied"},
        headers=people.headers("instructor"),
    )
    assert r.status_code == 201, r.text
    assert stats.read()["histogram"][2] == 1

    # A policy change: 50 % off the second attempt.
    r = api.patch(
        stats.url, json={"attempt_penalties": [0, 0.5]}, headers=people.headers("instructor")
    )
    assert r.status_code == 200, r.text
    assert stats.read()["histogram"][5] == 1  # student: 10 x 0.5

    # The roster: student_b moves to section A.
    assert stats.read("A")["students"] == 1
    r = api.patch(
        f"/api/courses/{course}/members/{b}",
        json={"section": "A"},
        headers=people.headers("instructor"),
    )
    assert r.status_code == 200, r.text
    assert stats.read("A")["students"] == 2

    # Eight days later the diagnosis of the first attempt is last week's, not this week's.
    assert stats.read()["week"] == [{"code": "no-scale", "last_7_days": 1, "previous_7_days": 0}]
    monkeypatch.setattr(gradebook_service, "utcnow", lambda: now + 8 * 24 * HOUR)
    assert stats.read()["week"] == [{"code": "no-scale", "last_7_days": 0, "previous_7_days": 1}]


@pytest.mark.slow
def test_a_regrade_shows(api: TestClient, sessions: sessionmaker[Session], people: People) -> None:
    """An attempt stored as accepted whose code is wrong: the regrade (the real sandbox)
    takes its acceptance away."""
    course = people.courses["course"]
    a = make_assignment(sessions, course, [(MHA, 10.0)], due_at=utcnow() + 48 * HOUR)
    sid = add_attempt(sessions, a, people.users["student"], MHA, 1, utcnow() - HOUR, 1.0,
                      code=WRONG)  # fmt: skip
    stats = Stats(api, people, a)
    assert stats.read()["accepted"] == 1
    r = api.post(f"{stats.url}/regrade", headers=people.headers("instructor"))
    assert r.status_code == 202, r.text
    wait_done(sessions, [sid])
    assert stats.read()["accepted"] == 0
