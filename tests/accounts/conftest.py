"""Fixtures for the accounts suite: an app on a fresh SQLite file with everyone of
tests/support/people.py, and a password for the student."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.auth.models import User
from app.auth.passwords import hash_password
from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.people import People, seed_people

PASSWORD = "correct horse battery"
# What a same-site fetch from the page sends; TestClient's host is "testserver".
JSON = {"Content-Type": "application/json"}


MakeClient = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[MakeClient]:
    with ExitStack() as stack:
        count = 0

        def make(database_url: str | None = None, **overrides: Any) -> TestClient:
            nonlocal count
            count += 1
            settings = make_settings(tmp_path / f"data{count}", database_url, **overrides)
            return stack.enter_context(TestClient(create_app(settings)))

        yield make


def set_password(client: TestClient, user_id: int, password: str = PASSWORD) -> None:
    with client.app.state.sessions() as session:  # type: ignore[attr-defined]
        user = session.get(User, user_id)
        assert user is not None
        user.password_hash = hash_password(password)
        session.commit()


@pytest.fixture
def api(make_client: MakeClient) -> TestClient:
    return make_client()


@pytest.fixture
def people(api: TestClient) -> People:
    found = seed_people(api.app.state.sessions)  # type: ignore[attr-defined]
    set_password(api, found.users["student"])
    return found


def login(client: TestClient, email: str = "student@example.edu", password: str = PASSWORD) -> Any:
    return client.post("/api/auth/login", json={"email": email, "password": password})


def error_of(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]
