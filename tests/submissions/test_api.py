"""The submissions API, graded for real in the sandbox, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.db.base import utcnow
from app.submissions.models import Submission
from app.submissions.repository import SubmissionRepository
from app.worker.runtime import open_database
from tests.submissions.conftest import MakeClient, grader_settings
from tests.support.api import wait_done
from tests.support.codes import CORRECT, TIMEOUT, WRONG

URL = "/api/problems/multi-head-attention/submissions"


def error_of(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


def test_submit_returns_202_then_the_result_by_polling(api: TestClient):
    response = api.post(URL, json={"code": CORRECT})
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["status"] in ("queued", "running")
    assert response.headers["location"] == f"/api/submissions/{body['id']}"
    done = wait_done(api, body["id"])
    assert done["verdict"] == "accepted"
    assert done["score"] == 1.0
    assert done["problem_id"] == "multi-head-attention"
    assert done["mode"] == "submit"
    assert done["attempts"] == 1
    assert done["test_set_version"] == 1
    assert done["finished_at"] >= done["created_at"]
    assert {t["visibility"] for t in done["tests"]} == {"public", "hidden"}
    assert all(r["status"] == "passed" for r in done["requirements"])


def test_wait_returns_200_with_the_finished_result(api: TestClient):
    response = api.post(URL, params={"wait": 30}, json={"code": WRONG})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "done"
    assert body["verdict"] == "wrong_answer"
    assert body["score"] < 1.0
    assert body["diagnoses"], "a wrong answer comes with a diagnosis"
    assert api.get(response.headers["location"]).json() == body


def test_wait_gives_up_with_202_when_grading_takes_longer(api: TestClient):
    response = api.post(URL, params={"wait": 0.2}, json={"code": TIMEOUT})
    assert response.status_code == 202
    assert response.json()["status"] in ("queued", "running")
    assert wait_done(api, response.json()["id"])["verdict"] == "time_limit_exceeded"


def test_examples_mode_grades_public_cases_only(api: TestClient):
    response = api.post(URL, params={"wait": 30}, json={"code": CORRECT, "mode": "examples"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["mode"] == "examples"
    assert body["verdict"] == "accepted"
    assert body["tests"] and {t["visibility"] for t in body["tests"]} == {"public"}
    # The version whose public cases ran (no instructor case stored yet: the built-in one).
    assert body["test_set_version"] == 1


@pytest.mark.parametrize(
    ("payload", "status", "code", "field"),
    [
        ({"code": ""}, 422, "empty_code", "code"),
        ({"code": "   \n\t"}, 422, "empty_code", "code"),
        ({"code": "x = 1\x00"}, 422, "invalid_code", "code"),
        ({"code": "x = '\ud800'"}, 422, "invalid_code", "code"),
        ({}, 422, "invalid_request", "code"),
        ({"code": 5}, 422, "invalid_request", "code"),
        ({"code": "x = 1", "mode": "fast"}, 422, "invalid_request", "mode"),
        ({"code": "x = 1", "extra": 1}, 422, "invalid_request", "extra"),
        ([1, 2], 422, "invalid_request", None),
    ],
)
def test_invalid_bodies_get_clear_errors(
    api: TestClient, payload: Any, status: int, code: str, field: str | None
):
    response = api.post(
        URL, content=json.dumps(payload), headers={"content-type": "application/json"}
    )
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code
    assert error["field"] == field
    assert error["message"]


def test_code_over_the_size_limit_is_413(make_client: MakeClient):
    api = make_client(max_code_bytes=1024)
    response = api.post(URL, json={"code": "#" * 1025})
    assert response.status_code == 413
    assert error_of(response)["code"] == "code_too_large"
    # Multi-byte characters count as bytes, not characters.
    response = api.post(URL, json={"code": "é" * 513})
    assert response.status_code == 413
    assert api.post(URL, json={"code": "#" * 1024}).status_code == 202


def test_non_utf8_and_non_json_bodies_are_400(api: TestClient):
    response = api.post(
        URL, content=b'{"code": "\xff\xfe"}', headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_encoding"
    response = api.post(URL, content=b"code=1", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_json"


def test_unknown_problem_and_unknown_submission_are_404(api: TestClient):
    response = api.post("/api/problems/no-such-problem/submissions", json={"code": CORRECT})
    assert response.status_code == 404
    assert error_of(response)["code"] == "problem_not_found"
    for path in ("/api/submissions/nope", "/api/submissions/nope/events"):
        response = api.get(path)
        assert response.status_code == 404
        assert error_of(response)["code"] == "submission_not_found"


@pytest.mark.parametrize("wait", ["-1", "31", "soon"])
def test_wait_out_of_range_is_422(api: TestClient, wait: str):
    response = api.post(URL, params={"wait": wait}, json={"code": CORRECT})
    assert response.status_code == 422
    assert error_of(response)["field"] == "wait"


def test_idempotency_key_makes_retries_safe(api: TestClient):
    first = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == 202
    again = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "k-1"})
    assert again.status_code in (200, 202)
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"
    conflict = api.post(URL, json={"code": WRONG}, headers={"Idempotency-Key": "k-1"})
    assert conflict.status_code == 409
    assert error_of(conflict)["code"] == "idempotency_key_reused"
    examples = api.post(
        URL, json={"code": CORRECT, "mode": "examples"}, headers={"Idempotency-Key": "k-1"}
    )
    assert examples.status_code == 409
    other = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "k-2"})
    assert other.json()["id"] != first.json()["id"]
    assert api.post(URL, json={"code": CORRECT}).json()["id"] != first.json()["id"]
    bad = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "a b"})
    assert bad.status_code == 422


def test_one_idempotency_key_from_two_clients_gives_two_submissions(api: TestClient):
    # Keys belong to their client: another client's key must not replay (or leak) this one's.
    other = TestClient(api.app, client=("192.0.2.7", 50000))
    mine = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "shared"})
    theirs = other.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "shared"})
    assert mine.status_code == 202 and theirs.status_code == 202, (mine.text, theirs.text)
    assert "idempotent-replayed" not in theirs.headers
    assert theirs.json()["id"] != mine.json()["id"]
    # Each client's retry still finds its own submission.
    again = other.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "shared"})
    assert again.json()["id"] == theirs.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"


def test_concurrent_posts_with_one_key_give_one_submission(api: TestClient):
    count = 8
    start = threading.Barrier(count)
    responses: list[Any] = [None] * count

    def post(n: int) -> None:
        start.wait()
        responses[n] = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "race"})

    threads = [threading.Thread(target=post, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(r is not None and r.status_code in (200, 202) for r in responses), [
        (r.status_code, r.text) for r in responses if r is not None
    ]
    assert len({r.json()["id"] for r in responses}) == 1, "one row for one key"
    created = [r for r in responses if "idempotent-replayed" not in r.headers]
    assert len(created) == 1, "exactly one POST created it; the others replayed it"


def test_rate_limit_answers_429_with_retry_after(make_client: MakeClient):
    api = make_client(rate_limit=2, rate_window_seconds=120)
    first = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "r"})
    assert first.status_code == 202
    assert api.post(URL, json={"code": WRONG}).status_code == 202
    response = api.post(URL, json={"code": CORRECT})
    assert response.status_code == 429
    assert error_of(response)["code"] == "rate_limited"
    assert 1 <= int(response.headers["retry-after"]) <= 120
    # A retry of an accepted request is answered, not limited: it creates nothing.
    replay = api.post(URL, json={"code": CORRECT}, headers={"Idempotency-Key": "r"})
    assert replay.status_code in (200, 202)
    assert replay.json()["id"] == first.json()["id"]


def test_full_queue_answers_503_with_retry_after(make_client: MakeClient):
    api = make_client(queue_max=1, workers=1)
    first = api.post(URL, json={"code": TIMEOUT})
    assert first.status_code == 202
    response = api.post(URL, json={"code": CORRECT})
    assert response.status_code == 503
    assert error_of(response)["code"] == "queue_full"
    assert int(response.headers["retry-after"]) >= 1
    wait_done(api, first.json()["id"])
    assert api.post(URL, json={"code": CORRECT}).status_code == 202


def read_events(
    api: TestClient, path: str, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with api.stream("GET", path, headers=headers or {}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        current: dict[str, Any] = {}
        for line in response.iter_lines():
            if not line:
                if current:
                    events.append(current)
                current = {}
            elif line.startswith(":"):
                continue
            else:
                key, _, value = line.partition(": ")
                current[key] = json.loads(value) if key == "data" else value
    return events


def test_events_stream_each_state_and_phase_and_end_with_the_result(api: TestClient):
    submission_id = api.post(URL, json={"code": WRONG}).json()["id"]
    events = read_events(api, f"/api/submissions/{submission_id}/events")
    kinds = [e["event"] for e in events]
    statuses = [e["data"]["status"] for e in events if e["event"] == "status"]
    assert statuses == ["queued", "running", "done"]
    # The sandbox phase is announced when the run ends, before grading; the others with the result.
    phases = [e["data"]["phase"] for e in events if e["event"] == "phase"]
    assert phases == ["sandbox", "compare", "diagnose"]
    order = [e["data"].get("phase") or e["data"].get("status") for e in events[:-1]]
    assert order.index("running") < order.index("sandbox") < order.index("done")
    assert kinds[-1] == "result"
    assert [int(e["id"]) for e in events] == sorted(int(e["id"]) for e in events)
    result = events[-1]["data"]
    assert result == api.get(f"/api/submissions/{submission_id}").json()
    assert result["verdict"] == "wrong_answer"
    # Resuming after the first event replays only what followed it.
    resumed = read_events(
        api, f"/api/submissions/{submission_id}/events", {"Last-Event-ID": events[0]["id"]}
    )
    assert resumed == events[1:]


def test_events_stream_when_committed_not_at_the_next_poll(make_client: MakeClient) -> None:
    """In the embedded mode the grader's commits wake the stream: with the poll interval at its
    10 s maximum, a whole grading still streams well within one interval."""
    api = make_client(poll_seconds=10)
    submission_id = api.post(URL, json={"code": WRONG}).json()["id"]
    start = time.monotonic()
    events = read_events(api, f"/api/submissions/{submission_id}/events")
    elapsed = time.monotonic() - start
    assert [e["data"]["status"] for e in events if e["event"] == "status"][-1] == "done"
    assert events[-1]["event"] == "result"
    assert elapsed < 5, f"the stream waited for a poll ({elapsed:.1f} s)"


def test_a_failing_grader_is_retried_then_reported_as_internal_error(make_client: MakeClient):
    # A real infrastructure failure: the docker backend with no Docker engine behind it.
    api = make_client(
        sandbox="docker", docker_url="unix:///nonexistent/docker.sock", max_attempts=2
    )
    submission_id = api.post(URL, json={"code": CORRECT}).json()["id"]
    done = wait_done(api, submission_id)
    assert done["verdict"] == "internal_error"
    assert done["attempts"] == 2
    assert done["error"].startswith("the grader failed")
    events = read_events(api, f"/api/submissions/{submission_id}/events")
    statuses = [e["data"]["status"] for e in events if e["event"] == "status"]
    assert statuses == ["queued", "running", "queued", "running", "done"]


def test_a_submission_that_keeps_crashing_workers_ends_as_internal_error(
    make_client: MakeClient, tmp_path: Path, database_url: str | None
) -> None:
    """A row whose every grading so far killed its worker (running at ``max_attempts``, lease
    expired) is not graded again: the next claim stores it as internal_error."""
    api = make_client(max_attempts=2, sweep_seconds=0.2)
    engine, sessions = open_database(grader_settings(tmp_path / "data", database_url))
    try:
        with sessions() as session:
            SubmissionRepository(session).add(
                Submission(
                    id="crashes-workers",
                    problem_id="multi-head-attention",
                    mode="submit",
                    # Would be accepted if graded: only the guard makes it internal_error.
                    code=CORRECT,
                    code_sha256="-",
                    client="crasher",
                    request_sha256="-",
                    status="running",
                    attempts=2,
                    run=1,
                    lease_token="dead-worker",
                    lease_expires_at=utcnow() - timedelta(seconds=1),
                    created_at=utcnow(),
                    started_at=utcnow(),
                )
            )
            session.commit()
        done = wait_done(api, "crashes-workers", timeout=30)
    finally:
        engine.dispose()
    assert done["verdict"] == "internal_error"
    assert done["error"] == "grading was interrupted 2 times; it was not graded"
    assert done["tests"] == []
