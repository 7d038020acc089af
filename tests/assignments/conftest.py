"""Fixtures for the assignments suite: an app on a fresh SQLite file with a person of every
role (tests/support/people.py), a course that already holds another assignment with overrides
(``Course.sibling``), and helpers to create assignments and submit in them."""

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
        self.sibling: dict[str, Any] = {}

    def listed(self, who: str) -> list[int]:
        """The ids of the assignments ``who`` lists, but the sibling's."""
        response = self.api.get(self.base, headers=self.people.headers(who))
        assert response.status_code == 200, (who, response.text)
        return [a["id"] for a in response.json() if a["id"] != self.sibling.get("id")]

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
    """The course, already holding a closed sibling assignment on the same problem whose
    overrides grant ``student`` and section B a long extension and more attempts: an
    assignment's rules that read another's overrides show in every test."""
    course = Course(api, people)
    # Full feedback: a restricting policy would follow its students into every test's reports.
    course.sibling = course.create(
        title="Sibling homework", due_at=at(-1), max_attempts=1, feedback="visible"
    )
    for target in ({"user_id": people.users["student"]}, {"section": "B"}):
        granted = api.post(
            f"{course.base}/{course.sibling['id']}/overrides",
            json={**target, "until": at(24 * 30), "extra_attempts": 5},
            headers=people.headers("instructor"),
        )
        assert granted.status_code == 201, granted.text
    return course


def error_of(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]
