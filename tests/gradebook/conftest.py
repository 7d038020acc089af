"""An app on a fresh SQLite file and on a real PostgreSQL (each test runs on both), with two
courses and a person of every role (seed_people), and in the course a third student,
``unsectioned``, in no section: whatever a section grants must not reach them, nor a
classmate's personal override."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.people import People, add_student, seed_people


@pytest.fixture
def api(tmp_path: Path, database_url: str | None) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(tmp_path / "data", database_url))) as client:
        yield client


@pytest.fixture
def sessions(api: TestClient) -> sessionmaker[Session]:
    found: sessionmaker[Session] = api.app.state.sessions  # type: ignore[attr-defined]
    return found


@pytest.fixture
def people(sessions: sessionmaker[Session]) -> People:
    people = seed_people(sessions)
    add_student(sessions, people, "unsectioned")
    return people
