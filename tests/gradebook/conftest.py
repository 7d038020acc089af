"""An app on a fresh SQLite file and on a real PostgreSQL (each test runs on both), with two
courses and a person of every role (seed_people), and in the course a third student,
``unsectioned``, in no section: whatever a section grants must not reach them, nor a
classmate's personal override. The other course has an assignment on the same problems, with a
graded attempt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from tests.gradebook.factories import MHA, T0, add_attempt, make_assignment
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
    # The other course shares the problems: its assignment and graded attempt must never show
    # in this course's gradebook, exports or lists.
    theirs = make_assignment(sessions, people.courses["other_course"], title="Their homework")
    add_attempt(sessions, theirs, people.users["other_student"], MHA, 1, T0, 1.0)
    return people
