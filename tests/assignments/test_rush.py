"""The deadline rush, on SQLite and PostgreSQL: 60 students, each with their own HTTP client to
the real server (uvicorn on 127.0.0.1), submit twice; the due date falls between the two.

The server is held up on purpose between a request's arrival and its insert (the submissions
service dependency waits at a gate), the way a loaded grader queues requests: every first
submission arrives before the due date, which is then set and passed, and only then are they
inserted. Each must be accepted and stored as on time; each second one, sent after the due
date, is refused (the assignment closes at its due date)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request
from sqlalchemy import select

from app.assignments.models import Assignment, AssignmentProblem
from app.auth.accounts import create_user
from app.auth.tokens import issue_token
from app.courses.models import Course, Membership
from app.main import create_app
from app.submissions.deps import get_submission_service
from app.submissions.models import Submission
from app.submissions.service import SubmissionService
from tests.instructors.conftest import make_settings
from tests.support.codes import variant

STUDENTS = 60
PROBLEM = "multi-head-attention"


@dataclass
class Rush:
    app: FastAPI
    url: str
    assignment_id: int
    course_id: int
    tokens: list[str]
    gate: threading.Event
    arrived: list[int]  # how many requests reached the gate


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def rush(tmp_path: Path, database_url: str | None) -> Iterator[Rush]:
    settings = make_settings(tmp_path / "data", database_url, workers=1)
    app = create_app(settings)
    gate = threading.Event()
    arrived = [0]
    lock = threading.Lock()

    async def held_up(request: Request) -> SubmissionService:
        with lock:
            arrived[0] += 1
        while not gate.is_set():
            await asyncio.sleep(0.01)
        return await get_submission_service(request)

    app.dependency_overrides[get_submission_service] = held_up
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        with app.state.sessions() as session:
            course = Course(title="Rush", join_code=None)
            session.add(course)
            session.flush()
            tokens = []
            for i in range(STUDENTS):
                user = create_user(session, f"r{i}@example.edu", f"R {i}", "member")
                session.add(Membership(course_id=course.id, user_id=user.id, role="student"))
                tokens.append(issue_token(session, user.id, "rush")[1])
            assignment = Assignment(
                course_id=course.id, title="Due mid-rush", due_at=_now() + timedelta(hours=1)
            )
            session.add(assignment)
            session.flush()
            session.add(AssignmentProblem(assignment_id=assignment.id, problem_id=PROBLEM))
            session.commit()
            ids = (assignment.id, course.id)
        yield Rush(app, f"http://127.0.0.1:{port}", *ids, tokens, gate, arrived)
    finally:
        gate.set()
        server.should_exit = True
        thread.join(30)


def _now() -> datetime:
    return datetime.now(UTC)


async def _burst(rush: Rush) -> tuple[list[list[httpx.Response]], datetime]:
    path = (
        f"/api/courses/{rush.course_id}/assignments/{rush.assignment_id}"
        f"/problems/{PROBLEM}/submissions"
    )
    due: list[datetime] = []

    async def student(i: int, client: httpx.AsyncClient) -> list[httpx.Response]:
        out = []
        for n in range(2):
            out.append(await client.post(path, json={"code": variant("wrong", 100 * i + n)}))
        return out

    clients = [
        httpx.AsyncClient(base_url=rush.url, headers={"Authorization": f"Bearer {t}"}, timeout=120)
        for t in rush.tokens
    ]
    try:
        # Connected first, as a class's open pages are.
        await asyncio.gather(*(c.get("/healthz") for c in clients))
        tasks = [asyncio.create_task(student(i, c)) for i, c in enumerate(clients)]
        while rush.arrived[0] < STUDENTS:
            await asyncio.sleep(0.01)
        # Every first submission has arrived: the due date now falls after all of them and
        # before any of them is inserted.
        due.append(_now() + timedelta(milliseconds=100))
        with rush.app.state.sessions() as session:
            assignment = session.get(Assignment, rush.assignment_id)
            assert assignment is not None
            assignment.due_at = due[0]
            session.commit()
        await asyncio.sleep((due[0] - _now()).total_seconds() + 0.1)
        rush.gate.set()
        return list(await asyncio.gather(*tasks)), due[0]
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


@pytest.mark.slow
def test_on_time_submissions_count_when_due_falls_inside_the_rush(rush: Rush) -> None:
    # In a thread of its own: browser tests earlier in a run leave an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        answers, due = pool.submit(asyncio.run, _burst(rush)).result()
    first = [a[0] for a in answers]
    second = [a[1] for a in answers]
    refused = [r.text for r in first if r.status_code != 202]
    assert refused == [], f"{len(refused)} on-time submissions refused: {refused[:3]}"
    assert {r.status_code for r in second} == {409}
    assert {r.json()["error"]["code"] for r in second} == {"assignment_closed"}
    with rush.app.state.sessions() as session:
        rows = session.execute(select(Submission.received_at, Submission.created_at)).all()
    assert len(rows) == STUDENTS
    late = [r for r in rows if r.received_at > due]
    assert late == [], f"{len(late)} on-time submissions stored as arrived after the due date"
    assert all(r.created_at > due for r in rows)  # the rush really held them past it
