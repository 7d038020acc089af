"""The embedded mode survives ``kill -9``: queued and running submissions finish after restart.

The lease is far longer than the test, so the lease reaper cannot rescue the interrupted row:
only the start-up re-queue can, and it must do so at once.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.conftest import PROBLEMS_DIR
from tests.support.codes import EXPECTED, variant
from tests.support.services import restart_serve, serve, wait_for

# Timeouts first, so the single grader is busy and the rest are still queued at the kill.
PLAN = ["timeout", "timeout", "correct", "wrong", "correct", "timeout", "wrong", "correct"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_killed_server_finishes_every_submission_after_restart(tmp_path: Path):
    data_dir = tmp_path / "data"
    env = {
        "GRADER_DATA_DIR": str(data_dir),
        "GRADER_PROBLEMS_DIR": str(PROBLEMS_DIR),
        "GRADER_WORKERS": "1",
        "GRADER_CPU_SECONDS": "1",
        "GRADER_WALL_SECONDS": "2",
        "GRADER_POLL_SECONDS": "0.1",
        "GRADER_LEASE_SECONDS": "3600",
    }
    database = data_dir / "grader.sqlite3"

    def query(sql: str) -> list[tuple[object, ...]]:
        with sqlite3.connect(database, timeout=30) as conn:
            return conn.execute(sql).fetchall()

    server, base = serve(env, tmp_path / "api.log")
    try:
        ids = []
        for n, kind in enumerate(PLAN):
            response = httpx.post(
                f"{base}/api/problems/multi-head-attention/submissions",
                json={"code": variant(kind, n)},
            )
            assert response.status_code == 202, response.text
            ids.append(response.json()["id"])
        wait_for(
            lambda: query("SELECT count(*) FROM submissions WHERE status = 'running'")[0][0] == 1,
            30,
            "grading to start",
            interval=0.02,
        )
        server.kill()
        # The first timeout holds the single grader for seconds: it was being graded at the kill.
        interrupted = [
            sid for (sid,) in query("SELECT id FROM submissions WHERE status = 'running'")
        ]
        assert interrupted == ids[:1], interrupted
        pending = query("SELECT count(*) FROM submissions WHERE status != 'done'")[0][0]
        assert pending == len(PLAN)

        restart_serve(server, base)
        # Graded again (a second attempt claimed) within seconds of the restart, not at the
        # lease's expiry an hour later.
        wait_for(
            lambda: query(f"SELECT attempts FROM submissions WHERE id = '{ids[0]}'")[0][0] == 2,
            10,
            "the interrupted submission to be graded again",
            interval=0.05,
        )

        def all_done() -> bool:
            return all(
                httpx.get(f"{base}/api/submissions/{sid}").json()["status"] == "done" for sid in ids
            )

        wait_for(all_done, 120, "every submission to finish after the restart", interval=0.3)
        for kind, sid in zip(PLAN, ids, strict=True):
            body = httpx.get(f"{base}/api/submissions/{sid}").json()
            assert body["verdict"] == EXPECTED[kind], (kind, body["verdict"], body["error"])
        graded = Counter(sid for (sid,) in query("SELECT submission_id FROM gradings"))
        assert graded == Counter(ids), "each graded exactly once"
        attempts = dict(query("SELECT id, attempts FROM submissions"))
        assert attempts[ids[0]] == 2, "interrupted: graded again"
        assert all(attempts[sid] == 1 for sid in ids[1:])
    finally:
        server.stop()
