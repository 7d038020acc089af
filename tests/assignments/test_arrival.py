"""A submission counts by when its request arrived (app/core/arrival.py), not by when a busy
server inserted it: late credit, closing, and the proxy header only a trusted proxy may set."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import Request
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.assignments.models import Assignment
from app.core.arrival import STATE_KEY, ArrivalMiddleware, proxy_start
from app.core.config import Settings
from app.main import SUBMISSION_PATHS, create_app
from app.submissions.deps import get_submission_service
from app.submissions.models import Submission
from app.submissions.pressure import PRESSURE
from app.submissions.service import SubmissionService
from tests.assignments.conftest import Course, at, error_of
from tests.instructors.conftest import make_settings
from tests.support.codes import CORRECT, sleeper, variant
from tests.support.people import seed_people


def only_row(course: Course) -> Submission:
    with course.api.app.state.sessions() as session:  # type: ignore[attr-defined]
        (row,) = session.scalars(select(Submission)).all()
        return row


def test_arrival_not_insert_decides_late_credit(course: Course) -> None:
    """The server is slowed on purpose between the request's arrival and its insert: a hook
    (the service dependency) moves the due date to just after the arrival and sleeps past it.
    Counted by its insert, the submission would earn the late window's 50 %."""
    created = course.create(due_at=at(1), late_deadlines=[{"until": at(2), "credit": 0.5}])
    app = course.api.app
    sessions = app.state.sessions  # type: ignore[attr-defined]

    async def slow_service(request: Request) -> SubmissionService:
        arrived: datetime = request.scope["state"][STATE_KEY]
        due = arrived + timedelta(milliseconds=300)
        with sessions() as session:
            assignment = session.get(Assignment, created["id"])
            assignment.due_at = due
            session.commit()
        await asyncio.sleep((due - datetime.now(UTC)).total_seconds() + 0.2)
        return await get_submission_service(request)

    app.dependency_overrides[get_submission_service] = slow_service  # type: ignore[attr-defined]
    try:
        response = course.submit(created["id"], CORRECT, wait=30)
    finally:
        app.dependency_overrides.clear()  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text
    row = only_row(course)
    with sessions() as session:
        due = session.get(Assignment, created["id"]).due_at
    assert row.received_at < due < row.created_at
    assert response.json()["received_at"] == row.received_at.isoformat().replace("+00:00", "Z")
    detail = course.api.get(
        f"{course.base}/{created['id']}/students/{course.people.users['student']}",
        headers=course.people.headers("instructor"),
    ).json()
    (attempt,) = detail["submissions"]
    assert attempt["credit_rule"] == "on time: 100 %", attempt
    assert attempt["credit_points"] == 10


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Course, Settings]]:
    settings = make_settings(
        tmp_path / "data", trusted_proxies=["10.0.0.1"], proxy_request_start=True
    )
    app = create_app(settings)
    with TestClient(app, client=("10.0.0.9", 50000)) as api:
        people = seed_people(app.state.sessions)
        yield Course(api, people), settings


def test_only_a_trusted_proxy_sets_the_arrival_time(
    proxied: tuple[Course, Settings],
) -> None:
    """Closed a minute ago; the header claims the request started two minutes ago. From an
    address that is not a trusted proxy it changes nothing; from the proxy it is believed."""
    course, _ = proxied
    created = course.create(due_at=at(-1 / 60))
    claimed = datetime.now(UTC) - timedelta(minutes=2)
    header = {"X-Request-Start": f"t={claimed.timestamp():.3f}"}
    refused = course.submit(created["id"], variant("wrong", 1), **header)
    assert refused.status_code == 409, refused.text
    assert error_of(refused)["code"] == "assignment_closed"
    proxy = TestClient(course.api.app, client=("10.0.0.1", 50001))
    accepted = proxy.post(
        f"{course.base}/{created['id']}/problems/multi-head-attention/submissions",
        json={"code": variant("wrong", 2)},
        headers=course.people.headers("student") | header,
    )
    assert accepted.status_code == 202, accepted.text
    assert abs((only_row(course).received_at - claimed).total_seconds()) < 0.002
    assert PRESSURE.accepting == 0  # the refusal closed its "being accepted" mark too


def test_proxy_start_formats() -> None:
    at_s = 1_796_000_000.25
    for text in (f"t={at_s}", f"{at_s * 1000:.0f}", f"t={at_s * 1_000_000:.0f}"):
        parsed = proxy_start(text)
        assert parsed is not None and abs(parsed.timestamp() - at_s) < 1e-3, text
    assert proxy_start("t=soon") is None and proxy_start("12") is None


def test_the_bodys_last_byte_is_the_arrival() -> None:
    """A client that sends its headers before the due date and holds the body back is stamped
    when the body's last byte arrives, before the application runs."""
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen["stamp"] = scope["state"][STATE_KEY]
        seen["body"] = b""
        while True:
            message = await receive()
            seen["body"] += message.get("body", b"")
            if not message.get("more_body"):
                break

    async def main() -> float:
        chunks = [
            {"type": "http.request", "body": b'{"code": ', "more_body": True},
            {"type": "http.request", "body": b'"x = 1"}', "more_body": False},
        ]
        last_sent = 0.0

        async def receive() -> dict[str, Any]:
            nonlocal last_sent
            if len(chunks) == 1:
                await asyncio.sleep(0.3)  # the held-back body
                last_sent = time.time()
            return chunks.pop(0)

        middleware = ArrivalMiddleware(app, Settings(), SUBMISSION_PATHS, cap=1 << 20)
        scope = {"type": "http", "method": "POST", "path": "/api/problems/p/submissions",
                 "headers": [], "client": ("127.0.0.1", 1)}  # fmt: skip
        await middleware(scope, receive, None)
        return last_sent

    # In a thread of its own: browser tests earlier in a run leave an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        last_sent = pool.submit(asyncio.run, main()).result()
    assert seen["body"] == b'{"code": "x = 1"}'
    assert seen["stamp"].timestamp() >= last_sent


def test_a_full_queue_refuses_practice_but_not_a_graded_attempt(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", queue_max=1, workers=1, wall_seconds=10.0)
    app = create_app(settings)
    with TestClient(app) as api:
        course = Course(api, seed_people(app.state.sessions))
        created = course.create()
        practice = "/api/problems/multi-head-attention/submissions"
        first = api.post(
            practice, json={"code": sleeper(3.0, 1)}, headers=course.people.headers("student")
        )
        assert first.status_code == 202, first.text
        full = api.post(
            practice, json={"code": variant("wrong", 2)}, headers=course.people.headers("student_b")
        )
        assert full.status_code == 503 and error_of(full)["code"] == "queue_full"
        graded = course.submit(created["id"], variant("wrong", 3), who="student_b")
        assert graded.status_code == 202, graded.text
