"""Late acknowledgement on its own: with the sweeper out of the picture, a job whose worker is
SIGKILLed mid-grade comes back from Redis (visibility timeout) and is graded by another worker."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.codes import SLOW_CORRECT
from tests.support.services import (
    AppProcess,
    PostgresCluster,
    celery_env,
    redis_server,
    serve,
    wait_for,
)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_killed_workers_job_is_redelivered_by_redis(postgres: PostgresCluster, tmp_path: Path):
    database_url = postgres.create_database("tensorjudge_late_ack")
    with redis_server() as redis_url:
        env = celery_env(
            database_url,
            redis_url,
            tmp_path / "data",
            workers="1",
            lease_seconds="2",
            visibility_timeout="4",
            # No sweeps during the test: only Redis can hand the job back.
            sweep_seconds="600",
        )
        engine = create_engine(database_url)

        def row(submission_id: str) -> tuple[str, int, str | None]:
            with engine.connect() as conn:
                found = conn.execute(
                    text("SELECT status, attempts, worker FROM submissions WHERE id = :id"),
                    {"id": submission_id},
                ).one()
                return found.status, found.attempts, found.worker

        server, base = serve(env, tmp_path / "api.log")
        first = AppProcess(["worker"], env, tmp_path / "worker-1.log").start()
        second = AppProcess(["worker"], env, tmp_path / "worker-2.log")
        try:
            response = httpx.post(
                f"{base}/api/problems/multi-head-attention/submissions",
                json={"code": SLOW_CORRECT},
            )
            assert response.status_code == 202
            submission_id = response.json()["id"]
            wait_for(lambda: row(submission_id)[0] == "running", 60, "grading to start", 0.02)
            first.kill()
            second.start()
            wait_for(lambda: row(submission_id)[0] == "done", 120, "the redelivered job", 0.2)
            _, attempts, worker = row(submission_id)
            assert attempts == 2
            assert worker is not None and worker.endswith(f":{second.pid}")
            body = httpx.get(f"{base}/api/submissions/{submission_id}").json()
            assert body["verdict"] == "accepted"
        finally:
            server.stop()
            first.stop()
            second.stop()
            engine.dispose()
