"""Scale-out mode: a Celery worker's commits wake the API process's ``?wait`` requests and event
streams over Redis pub/sub, without waiting for their database poll."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.support.api import wait_done
from tests.support.codes import CORRECT, WRONG
from tests.support.services import (
    AppProcess,
    PostgresCluster,
    celery_env,
    redis_server,
    serve,
)

# The safety poll (max(GRADER_POLL_SECONDS, 5 s)) is then 10 s: only a notice answers sooner.
POLL_SECONDS = 10


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_worker_s_commits_wake_the_api_s_waiters_and_streams(
    postgres: PostgresCluster, tmp_path: Path
) -> None:
    database_url = postgres.create_database("tensorjudge_notices")
    with redis_server() as redis_url:
        env = celery_env(
            database_url, redis_url, tmp_path / "data", workers="1", poll_seconds=str(POLL_SECONDS)
        )
        server, base = serve(env, tmp_path / "api.log")
        worker = AppProcess(["worker"], env, tmp_path / "worker.log").start()
        url = f"{base}/api/problems/multi-head-attention/submissions"
        try:
            # Warm-up: the worker process starts (imports, sandbox) before it takes jobs.
            first = httpx.post(url, json={"code": CORRECT}).json()["id"]
            wait_done(base, first, timeout=120)

            start = time.monotonic()
            answer = httpx.post(f"{url}?wait=30", json={"code": CORRECT}, timeout=60)
            elapsed = time.monotonic() - start
            assert answer.status_code == 200, answer.text
            assert answer.json()["verdict"] == "accepted"
            assert elapsed < POLL_SECONDS / 2, f"?wait waited for a poll ({elapsed:.1f} s)"

            submission_id = httpx.post(url, json={"code": WRONG}).json()["id"]
            start = time.monotonic()
            kinds = []
            with httpx.stream(
                "GET", f"{base}/api/submissions/{submission_id}/events", timeout=60
            ) as stream:
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        kinds.append(line.removeprefix("event: "))
                        if kinds[-1] == "result":
                            break
            elapsed = time.monotonic() - start
            assert kinds[-1] == "result" and "phase" in kinds, kinds
            assert elapsed < POLL_SECONDS / 2, f"the stream waited for a poll ({elapsed:.1f} s)"
        finally:
            server.stop()
            worker.stop()


def test_malformed_notices_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Notices are hints read from Redis: anything but the expected small JSON is dropped."""
    from app.submissions.broadcast import MAX_MESSAGE_BYTES, Listener
    from app.submissions.notices import COMPLETIONS

    listener = Listener("redis://127.0.0.1:1/0")  # never started: messages are handed in
    finished: list[str] = []
    monkeypatch.setattr(COMPLETIONS, "wake", lambda ids, result=None: finished.extend(ids))
    for bad in (
        "not bytes",
        b"not json",
        b'["a list"]',
        b'{"ids": "not a list"}',
        b'{"ids": [1, 2]}',
        b'{"ids": ["x"], "done": ["y"], "extra": ' + b"1" * MAX_MESSAGE_BYTES + b"}",
    ):
        listener._deliver(bad)
    assert listener.received == 0 and finished == []
    listener._deliver(b'{"ids": ["a", "b"], "done": ["b"]}')
    assert listener.received == 1 and finished == ["b"]
