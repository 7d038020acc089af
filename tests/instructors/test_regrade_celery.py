"""Regrade in the scale-out mode: API and a Celery worker as real processes, PostgreSQL, Redis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from app.core.config import REPO_ROOT
from tests.instructors.conftest import as_json, case_inputs
from tests.support.api import wait_done
from tests.support.codes import BATCH_FIVE_BUG
from tests.support.services import AppProcess, PostgresCluster, celery_env, redis_server, serve


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_regrade_goes_through_celery_workers(postgres: PostgresCluster, tmp_path: Path):
    database_url = postgres.create_database("tensorjudge_regrade_celery")
    with redis_server() as redis_url:
        env = celery_env(
            database_url,
            redis_url,
            tmp_path / "data",
            workers="1",
            sweep_seconds="1",
            poll_seconds="0.1",
        )
        environment = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
        created = subprocess.run(
            [sys.executable, "-m", "app", "tokens", "create", "--role", "admin", "--name", "ops"],
            cwd=REPO_ROOT,
            env={**environment, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        headers = {"Authorization": f"Bearer {created.stdout.split()[-1]}"}
        server, base = serve(env, tmp_path / "api.log")
        worker = AppProcess(["worker"], env, tmp_path / "worker.log").start()
        try:
            problem = f"{base}/api/problems/multi-head-attention"
            submitted = httpx.post(f"{problem}/submissions", json={"code": BATCH_FIVE_BUG})
            first = wait_done(base, submitted.json()["id"])
            assert first["verdict"] == "accepted" and first["test_set_version"] == 1

            case = {"name": "batch-5", "inputs": as_json(case_inputs(seed=11, batch=5))}
            added = httpx.post(f"{problem}/test-cases", json=case, headers=headers, timeout=60)
            assert added.status_code == 201, added.text
            regrade = httpx.post(f"{base}/api/submissions/{first['id']}/regrade", headers=headers)
            assert regrade.status_code == 202, regrade.text
            second = wait_done(base, first["id"])
            assert second["verdict"] == "wrong_answer" and second["test_set_version"] == 2
        except BaseException:
            print(server.log(), worker.log())
            raise
        finally:
            worker.stop()
            server.stop()
        engine = create_engine(database_url)
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT run, verdict, test_set_version, worker FROM gradings ORDER BY run")
            ).all()
        engine.dispose()
        assert [(r.run, r.verdict, r.test_set_version) for r in rows] == [
            (1, "accepted", 1),
            (2, "wrong_answer", 2),
        ]
        assert all(str(r.worker).endswith(f":{worker.pid}") for r in rows), "graded by the worker"
