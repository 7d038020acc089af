"""Fixtures for the submissions suite: every API test runs on SQLite and on a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.db.base import utcnow
from app.main import create_app
from app.submissions.models import Submission
from app.submissions.repository import SubmissionRepository
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
        # Built on the first grading: most tests never grade (priming is tested in
        # tests/observability).
        "sandbox_prime": False,
    }
    values.update(overrides)
    return Settings(**values)


def add_queued(
    sessions: sessionmaker[Session], count: int, clients: Sequence[str] | None = None
) -> list[str]:
    """``count`` queued submissions, oldest first, inserted straight into the database; the
    n-th from ``clients[n]``, by default each from its own client (a client's submissions are
    never running together)."""
    ids = [f"sub-{n:04d}" for n in range(count)]
    with sessions() as session:
        repo = SubmissionRepository(session)
        for n, submission_id in enumerate(ids):
            repo.add(
                Submission(
                    id=submission_id,
                    problem_id="multi-head-attention",
                    mode="submit",
                    code=f"x = {n}",
                    code_sha256="-",
                    client=clients[n] if clients is not None else f"test-{n}",
                    request_sha256="-",
                    status="queued",
                    attempts=0,
                    run=1,
                    created_at=utcnow() + timedelta(microseconds=n),
                )
            )
        session.commit()
    return ids


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
