"""End to end in the scale-out mode: PostgreSQL, Redis, an API process and two Celery worker
processes. One worker is SIGKILLed mid-grade and the API is killed and restarted; every one of
200 submissions still ends ``done`` with the right verdict, graded and stored exactly once."""

from __future__ import annotations

import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.codes import EXPECTED, variant
from tests.support.services import (
    AppProcess,
    PostgresCluster,
    celery_env,
    redis_server,
    restart_serve,
    serve,
    wait_for,
)

TOTAL = 200
# 60% correct, 30% wrong, 10% timing out (each of those costs a 1 s CPU limit).
KINDS = ["correct"] * 6 + ["wrong"] * 3 + ["timeout"]


def kind_of(n: int) -> str:
    return KINDS[n % len(KINDS)]


def submit(base: str, n: int) -> str:
    """POST with retries across an API restart; the Idempotency-Key keeps retries single."""
    deadline = time.monotonic() + 120
    while True:
        try:
            response = httpx.post(
                f"{base}/api/problems/multi-head-attention/submissions",
                json={"code": variant(kind_of(n), n)},
                headers={"Idempotency-Key": f"e2e-{n}"},
                timeout=30,
            )
            if response.status_code in (200, 202):
                submission_id: str = response.json()["id"]
                return submission_id
            assert response.status_code >= 500, response.text
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"could not submit #{n}")
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_200_submissions_survive_a_killed_worker_and_an_api_restart(
    postgres: PostgresCluster, tmp_path: Path
):
    database_url = postgres.create_database("tensorjudge_e2e")
    with redis_server() as redis_url:
        env = celery_env(
            database_url,
            redis_url,
            tmp_path / "data",
            workers="2",
            cpu_seconds="1",
            wall_seconds="2",
            rate_limit="100000",
            lease_seconds="3",
            sweep_seconds="1",
            visibility_timeout="20",
            poll_seconds="0.1",
        )
        engine = create_engine(database_url)

        def scalar(sql: str, **params: object) -> int:
            with engine.connect() as conn:
                return int(conn.execute(text(sql), params).scalar_one())

        server, base = serve(env, tmp_path / "api.log")
        workers = [AppProcess(["worker"], env, tmp_path / f"worker{i}.log").start() for i in (0, 1)]
        killed = workers[0]
        ids: dict[int, str] = {}
        started = time.monotonic()
        try:
            with ThreadPoolExecutor(4) as pool:
                for n, sid in zip(
                    range(70), pool.map(lambda n: submit(base, n), range(70)), strict=True
                ):
                    ids[n] = sid
                # SIGKILL a worker while it is grading: its jobs must come back.
                wait_for(
                    lambda: (
                        scalar(
                            "SELECT count(*) FROM submissions WHERE status = 'running' "
                            "AND worker LIKE :w",
                            w=f"%:{killed.pid}",
                        )
                        > 0
                    ),
                    120,
                    "the first worker to be grading",
                    interval=0.02,
                )
                killed.kill()
                with engine.connect() as conn:
                    interrupted = list(
                        conn.execute(
                            text(
                                "SELECT id FROM submissions WHERE status = 'running' "
                                "AND worker LIKE :w"
                            ),
                            {"w": f"%:{killed.pid}"},
                        ).scalars()
                    )
                futures = {n: pool.submit(submit, base, n) for n in range(70, TOTAL)}
                # Kill the API while the rest are being submitted, then start it again.
                wait_for(lambda: sum(f.done() for f in futures.values()) >= 40, 120, "submits")
                server.kill()
                restart_serve(server, base)
                for n, future in futures.items():
                    ids[n] = future.result()
            submitted = time.monotonic()

            wait_for(
                lambda: scalar("SELECT count(*) FROM submissions WHERE status = 'done'") >= TOTAL,
                600,
                "every submission to be graded",
                interval=0.5,
            )
            finished = time.monotonic()

            assert len(set(ids.values())) == TOTAL
            assert scalar("SELECT count(*) FROM submissions") == TOTAL, "a retry made a double"
            with engine.connect() as conn:
                rows = conn.execute(
                    text("SELECT id, status, verdict, attempts, idempotency_key FROM submissions")
                ).all()
                gradings = Counter(
                    sid for (sid,) in conn.execute(text("SELECT submission_id FROM gradings"))
                )
                results = Counter(
                    sid
                    for (sid,) in conn.execute(
                        text("SELECT submission_id FROM submission_events WHERE kind = 'result'")
                    )
                )
            by_id = {row.id: row for row in rows}
            wrong = {
                n: by_id[sid].verdict
                for n, sid in ids.items()
                if by_id[sid].verdict != EXPECTED[kind_of(n)]
            }
            assert not wrong, f"unexpected verdicts: {wrong}"
            assert all(row.status == "done" for row in rows)
            assert set(gradings) == set(by_id) and set(gradings.values()) == {1}
            assert set(results) == set(by_id) and set(results.values()) == {1}
            regraded = [row for row in rows if row.attempts > 1]
            assert interrupted, "the worker was killed while grading"
            assert all(by_id[sid].attempts >= 2 for sid in interrupted), "its jobs came back"
            sample = httpx.get(f"{base}/api/submissions/{ids[0]}").json()
            assert sample["status"] == "done" and sample["verdict"] == "accepted"

            attempts = sum(row.attempts for row in rows)
            print(
                f"\n[e2e] {TOTAL} submissions: submitted in {submitted - started:.1f} s, "
                f"all graded after {finished - started:.1f} s "
                f"({TOTAL / (finished - started):.2f} submissions/s); "
                f"{attempts} grading attempts, {len(regraded)} re-graded after the kill"
            )
        finally:
            server.stop()
            for worker in workers:
                worker.stop()
            engine.dispose()
            for log in sorted(tmp_path.glob("*.log")):
                if os.environ.get("TJ_E2E_LOGS"):
                    print(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}")
