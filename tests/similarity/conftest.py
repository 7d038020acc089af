"""An app on a fresh SQLite file and on a real PostgreSQL, with the people of every role
(tests.support.people) and an assignment on multi_head_attention whose students handed in
independent correct solutions and two planted copies of one of them. The app's own runner is
idle (an hour between passes): tests run it with ``run_due`` when they mean to."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.main import create_app
from tests.gradebook.factories import MHA, T0, add_attempt, make_assignment
from tests.instructors.conftest import make_settings
from tests.similarity.solutions import COPY_RENAMED, COPY_REORDERED, INDEPENDENT
from tests.support.people import People, add_student, seed_people

STARTER = (Path(__file__).resolve().parents[2] / "problems" / MHA / "starter.py").read_text()


@dataclass
class ClassWork:
    people: People
    course_id: int
    assignment_id: int
    # Student key -> the code of their latest graded attempt.
    codes: dict[str, str]

    @property
    def base(self) -> str:
        return (
            f"/api/courses/{self.course_id}/assignments/{self.assignment_id}"
            f"/problems/{MHA}/similarity"
        )


@pytest.fixture
def api(tmp_path: Path, database_url: str | None) -> Iterator[TestClient]:
    settings = make_settings(tmp_path / "data", database_url, similarity_poll_seconds=3600)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def sessions(api: TestClient) -> sessionmaker[Session]:
    found: sessionmaker[Session] = api.app.state.sessions  # type: ignore[attr-defined]
    return found


@pytest.fixture
def work(sessions: sessionmaker[Session]) -> ClassWork:
    people = seed_people(sessions)
    course = people.courses["course"]
    assignment = make_assignment(sessions, course)
    codes = dict(INDEPENDENT) | {"copy_renamed": COPY_RENAMED, "copy_reordered": COPY_REORDERED}
    for key, code in codes.items():
        user = add_student(sessions, people, key)
        # An earlier attempt that is the copy's source too: only the latest attempt counts.
        add_attempt(sessions, assignment, user, MHA, 1, T0, 0.0, code=STARTER)
        add_attempt(sessions, assignment, user, MHA, 2, T0, 1.0, code=code)
    return ClassWork(people, course, assignment, codes)
