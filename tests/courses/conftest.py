"""Fixtures for the courses suite: an app on a fresh SQLite file with everyone of
tests/support/people.py in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.models import User
from app.courses.models import Course, Membership
from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.people import People, seed_people


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path / "data", roster_max_rows=50))) as c:
        yield c


@pytest.fixture
def sessions(client: TestClient) -> sessionmaker[Session]:
    found: sessionmaker[Session] = client.app.state.sessions  # type: ignore[attr-defined]
    return found


@pytest.fixture
def people(sessions: sessionmaker[Session]) -> People:
    return seed_people(sessions)


def snapshot(sessions: sessionmaker[Session]) -> tuple[Any, ...]:
    """Every account, course and membership as plain tuples: equal before and after a refused
    request, or the request changed something."""
    with sessions() as session:
        users = session.execute(
            select(User.id, User.email, User.name, User.role, User.password_hash).order_by(User.id)
        ).all()
        courses = session.execute(
            select(Course.id, Course.title, Course.join_code, Course.archived_at).order_by(
                Course.id
            )
        ).all()
        members = session.execute(
            select(
                Membership.course_id,
                Membership.user_id,
                Membership.role,
                Membership.section,
                Membership.status,
            ).order_by(Membership.id)
        ).all()
    return tuple(map(tuple, users)), tuple(map(tuple, courses)), tuple(map(tuple, members))


def error_of(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert "error" in body, body
    assert set(body["error"]) <= {"code", "message", "field"}, body
    return body["error"]  # type: ignore[no-any-return]
