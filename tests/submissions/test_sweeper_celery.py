"""The sweeper on its own: a row committed as queued but never published (the API died between
commit and publish, or Redis lost its data) is published by a worker's sweeper and graded. Redis
cannot rescue it: it never held a job for it, and its visibility timeout is an hour anyway."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

from app.core.config import Settings
from app.db.base import utcnow
from app.submissions.models import Submission
from app.submissions.repository import SubmissionRepository
from app.worker.runtime import open_database
from tests.conftest import PROBLEMS_DIR
from tests.support.codes import CORRECT
from tests.support.services import (
    AppProcess,
    PostgresCluster,
    celery_env,
    redis_server,
    wait_for,
)

SWEEP_SECONDS = 2.0


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_queued_row_never_published_is_graded_within_a_sweep(
    postgres: PostgresCluster, tmp_path: Path
):
    database_url = postgres.create_database("tensorjudge_sweeper")
    # Migrated before the worker starts, so the row can be inserted while it runs.
    settings = Settings(
        database_url=database_url, data_dir=tmp_path / "data", problems_dir=PROBLEMS_DIR
    )
    engine, sessions = open_database(settings)

    def status(submission_id: str) -> tuple[str, str | None]:
        with sessions() as session:
            row = session.get(Submission, submission_id, populate_existing=True)
            assert row is not None
            return row.status, row.verdict

    with redis_server() as redis_url:
        env = celery_env(
            database_url,
            redis_url,
            tmp_path / "data",
            workers="1",
            lease_seconds="3600",
            visibility_timeout="3600",
            sweep_seconds=str(SWEEP_SECONDS),
        )
        worker = AppProcess(["worker"], env, tmp_path / "worker.log").start()
        try:
            wait_for(lambda: " ready." in worker.log(), 60, "the worker to consume", 0.1)
            with sessions() as session:
                SubmissionRepository(session).add(
                    Submission(
                        id="never-published",
                        problem_id="multi-head-attention",
                        mode="submit",
                        code=CORRECT,
                        code_sha256="-",
                        client="lost-publish",
                        request_sha256="-",
                        status="queued",
                        attempts=0,
                        run=1,
                        # Committed a while ago: the sweeper does not wait for a publish still
                        # on its way.
                        created_at=utcnow() - timedelta(minutes=1),
                    )
                )
                session.commit()
            inserted = time.monotonic()
            # Claimed at the next sweep; a little slack for the job's trip through Redis.
            wait_for(
                lambda: status("never-published")[0] != "queued",
                SWEEP_SECONDS + 3,
                "the sweeper to publish the unsent row",
                0.05,
            )
            claimed_after = time.monotonic() - inserted
            wait_for(lambda: status("never-published")[0] == "done", 60, "its grading", 0.1)
            final = status("never-published")
        except BaseException:
            print(worker.log())
            raise
        finally:
            worker.stop()
            engine.dispose()
    assert final == ("done", "accepted")
    print(f"\n[sweeper] unsent row claimed {claimed_after:.2f} s after it was committed")
