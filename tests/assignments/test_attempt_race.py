"""Concurrent submissions on SQLite and a real PostgreSQL: exactly max_attempts are accepted,
numbered 1..max; the rest are refused with the count."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.main import create_app
from app.submissions.models import Submission
from tests.assignments.conftest import Course
from tests.instructors.conftest import make_settings
from tests.support.codes import variant
from tests.support.people import seed_people


def test_exactly_max_attempts_are_taken(tmp_path: Path, database_url: str | None) -> None:
    settings = make_settings(tmp_path / "data", database_url, workers=1)
    with TestClient(create_app(settings)) as api:
        course = Course(api, seed_people(api.app.state.sessions))  # type: ignore[attr-defined]
        created = course.create(max_attempts=4)
        with ThreadPoolExecutor(10) as pool:
            responses = list(
                pool.map(lambda n: course.submit(created["id"], variant("wrong", n)), range(12))
            )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [202] * 4 + [409] * 8, statuses
        refused = [r.json()["error"] for r in responses if r.status_code == 409]
        assert {e["code"] for e in refused} == {"attempts_exhausted"}
        assert all("4 of 4" in e["message"] for e in refused)
        with api.app.state.sessions() as session:  # type: ignore[attr-defined]
            taken = session.scalars(
                select(Submission.graded_attempt).where(Submission.assignment_id == created["id"])
            ).all()
        assert sorted(taken) == [1, 2, 3, 4]
