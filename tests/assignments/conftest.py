"""Fixtures for the assignments suite: an app on a fresh SQLite file with a person of every
role (tests/support/people.py), and helpers to create assignments and submit in them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.people import People, seed_people

PROBLEM = "multi-head-attention"


def at(hours: float) -> str:
    """An ISO time ``hours`` from now (negative: in the past)."""
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat()


def assignment_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "title": "Attention homework",
        "problems": [{"problem_id": PROBLEM, "points": 10}],
        "due_at": at(24),
    }
    body.update(overrides)
    return body


class Course:
    """The test course through its API, as each kind of person."""

    def __init__(self, api: TestClient, people: People) -> None:
        self.api = api
        self.people = people
        self.id = people.courses["course"]
        self.base = f"/api/courses/{self.id}/assignments"

    def create(self, **overrides: Any) -> dict[str, Any]:
        response = self.api.post(
            self.base, json=assignment_body(**overrides), headers=self.people.headers("instructor")
        )
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    def submit(
        self,
        assignment_id: int,
        code: str,
        who: str = "student",
        wait: float = 0,
        mode: str = "submit",
        problem: str = PROBLEM,
        **headers: str,
    ) -> Any:
        return self.api.post(
            f"{self.base}/{assignment_id}/problems/{problem}/submissions",
            params={"wait": wait} if wait else None,
            json={"code": code, "mode": mode},
            headers=self.people.headers(who) | headers,
        )


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    settings = make_settings(tmp_path / "data", workers=2, cpu_seconds=2.0, wall_seconds=5.0)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def people(api: TestClient) -> People:
    return seed_people(api.app.state.sessions)  # type: ignore[attr-defined]


@pytest.fixture
def course(api: TestClient, people: People) -> Course:
    return Course(api, people)


def error_of(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]
