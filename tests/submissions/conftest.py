"""Fixtures for the submissions suite: every API test runs on SQLite and on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from tests.conftest import PROBLEMS_DIR


def grader_settings(data_dir: Path, database_url: str | None, **overrides: Any) -> Settings:
    """Small limits, so timing-out submissions cost about a second."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": database_url,
        "problems_dir": PROBLEMS_DIR,
        "workers": 2,
        "cpu_seconds": 1.0,
        "wall_seconds": 2.0,
        "rate_limit": 10_000,
        "poll_seconds": 0.05,
    }
    values.update(overrides)
    return Settings(**values)


MakeClient = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path, database_url: str | None) -> Iterator[MakeClient]:
    with ExitStack() as stack:

        def make(**overrides: Any) -> TestClient:
            settings = grader_settings(tmp_path / "data", database_url, **overrides)
            return stack.enter_context(TestClient(create_app(settings)))

        yield make


@pytest.fixture
def api(make_client: MakeClient) -> TestClient:
    return make_client()
