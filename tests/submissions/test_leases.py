"""Lease renewal while grading (app.worker.leases), on both databases: a held lease outlives
its length, a released one expires, and a lease taken over by another worker is left alone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.submissions.models import Submission
from app.submissions.repository import SubmissionRepository
from app.worker.leases import LeaseKeeper
from app.worker.runtime import open_database
from tests.submissions.conftest import add_queued, grader_settings

# The shortest lease the settings allow: renewed every third of it.
LEASE_SECONDS = 1.0
LEASE = timedelta(seconds=LEASE_SECONDS)


@pytest.fixture
def settings(tmp_path: Path, database_url: str | None) -> Settings:
    return grader_settings(tmp_path / "data", database_url, lease_seconds=LEASE_SECONDS)


@pytest.fixture
def sessions(settings: Settings) -> Iterator[sessionmaker[Session]]:
    engine, made = open_database(settings)
    yield made
    engine.dispose()


def _claim(sessions: sessionmaker[Session], submission_id: str, token: str) -> bool:
    with sessions() as session:
        claimed = SubmissionRepository(session).claim(submission_id, token, "w", LEASE)
        session.commit()
        return claimed is not None


def _lease(sessions: sessionmaker[Session], submission_id: str) -> tuple[str | None, datetime]:
    with sessions() as session:
        row = session.get(Submission, submission_id)
        assert row is not None and row.lease_expires_at is not None
        return row.lease_token, row.lease_expires_at


@pytest.mark.slow
def test_a_held_lease_is_renewed_and_a_released_one_expires(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    (submission_id,) = add_queued(sessions, 1)
    keeper = LeaseKeeper(settings, sessions)
    assert _claim(sessions, submission_id, "a")
    with keeper.holding(submission_id, "a"):
        time.sleep(3 * LEASE_SECONDS)
        # Three lease lengths later it is still held: nobody else can claim it.
        assert not _claim(sessions, submission_id, "b")
        assert _lease(sessions, submission_id)[0] == "a"
    time.sleep(LEASE_SECONDS + 0.5)
    assert _claim(sessions, submission_id, "b"), "no longer renewed: the lease expired"


@pytest.mark.slow
def test_a_lease_taken_over_is_not_renewed(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    (submission_id,) = add_queued(sessions, 1)
    keeper = LeaseKeeper(settings, sessions)
    assert _claim(sessions, submission_id, "a")
    with keeper.holding(submission_id, "a"):
        # Another worker took it over (as after an expiry): "a" may no longer write.
        with sessions() as session:
            session.query(Submission).filter_by(id=submission_id).update(
                {"lease_token": "b"}, synchronize_session=False
            )
            session.commit()
        taken = _lease(sessions, submission_id)
        time.sleep(2 * LEASE_SECONDS)
        assert _lease(sessions, submission_id) == taken, "b's lease was not touched"
