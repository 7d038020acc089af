"""Event streams reveal nothing beyond their own submission: ids count that submission's events
alone (1, 2, 3...), no event names the worker or its host, and ``Last-Event-ID`` resumes by
that count. Numbering holds while writers race on one submission (a regrade against the
grading that finishes it)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.submissions.models import SubmissionEvent
from app.submissions.repository import SubmissionRepository
from app.worker.runtime import open_database
from tests.submissions.conftest import add_queued, grader_settings
from tests.support.api import wait_done
from tests.support.codes import CORRECT, WRONG

URL = "/api/problems/multi-head-attention/submissions"


def stream(api: TestClient, submission_id: str, after: str | None = None) -> tuple[list[Any], str]:
    """The stream's events as (id, kind, data), and its raw text."""
    headers = {"Last-Event-ID": after} if after is not None else {}
    events: list[tuple[str, str, dict[str, Any]]] = []
    lines: list[str] = []
    with api.stream("GET", f"/api/submissions/{submission_id}/events", headers=headers) as r:
        assert r.status_code == 200
        current: dict[str, str] = {}
        for line in r.iter_lines():
            lines.append(line)
            if line and not line.startswith(":"):
                key, _, value = line.partition(": ")
                current[key] = value
            elif not line and current:
                events.append((current["id"], current["event"], json.loads(current["data"])))
                current = {}
    return events, "\n".join(lines)


def test_each_submission_numbers_its_own_events_from_1(api: TestClient) -> None:
    first = api.post(URL, json={"code": CORRECT}).json()["id"]
    second = api.post(URL, json={"code": WRONG}).json()["id"]
    wait_done(api, first)
    wait_done(api, second)
    for submission_id in (first, second):
        events, _ = stream(api, submission_id)
        assert [int(e[0]) for e in events] == list(range(1, len(events) + 1)), events
        assert events[-1][1] == "result"


def test_no_event_names_the_worker_or_its_host(api: TestClient) -> None:
    submission_id = api.post(URL, json={"code": CORRECT}).json()["id"]
    wait_done(api, submission_id)
    events, raw = stream(api, submission_id)
    running = [data for _, kind, data in events if data.get("status") == "running"]
    assert running == [{"status": "running", "attempt": 1}]
    assert all("worker" not in data for _, _, data in events)
    assert socket.gethostname() not in raw
    assert socket.gethostname() not in api.get(f"/api/submissions/{submission_id}").text


def test_last_event_id_resumes_after_that_event_of_the_submission(api: TestClient) -> None:
    submission_id = api.post(URL, json={"code": CORRECT}).json()["id"]
    wait_done(api, submission_id)
    events, _ = stream(api, submission_id)
    assert len(events) >= 4
    for after in (1, 2, len(events) - 1):
        resumed, _ = stream(api, submission_id, after=str(after))
        assert resumed == events[after:]


@pytest.fixture
def sessions(tmp_path: Path, database_url: str | None) -> Iterator[sessionmaker[Session]]:
    engine, made = open_database(grader_settings(tmp_path / "data", database_url, workers=8))
    yield made
    engine.dispose()


def test_a_regrade_racing_the_finishing_grading_numbers_events_once(
    sessions: sessionmaker[Session],
) -> None:
    """The API's regrade spins on the row while a worker claims and finishes it, 20 times: every
    event gets the next number, none twice, none skipped."""
    (submission_id,) = add_queued(sessions, 1)
    errors: list[BaseException] = []
    for n in range(20):
        with sessions() as session:
            claimed = SubmissionRepository(session).claim(
                submission_id, f"t{n}", "w", timedelta(seconds=30)
            )
            session.commit()
        assert claimed is not None

        def regrade() -> None:
            try:
                while True:
                    with sessions() as session:
                        done = SubmissionRepository(session).requeue_for_regrade(submission_id)
                        session.commit()
                    if done is not None:
                        return
            except BaseException as exc:  # surfaced below: a thread's failure fails the test
                errors.append(exc)

        racer = threading.Thread(target=regrade)
        racer.start()
        with sessions() as session:
            assert SubmissionRepository(session).finish(
                claimed,
                f"t{n}",
                verdict="accepted",
                score=1.0,
                report_json="{}",
                test_set_version=1,
                phases={"sandbox": 0.1, "compare": 0.1},
            )
            session.commit()
        racer.join(30)
        assert not racer.is_alive() and not errors, errors
    with sessions() as session:
        stmt = select(SubmissionEvent.seq, SubmissionEvent.kind).where(
            SubmissionEvent.submission_id == submission_id
        )
        rows = sorted(session.execute(stmt).all())
    # queued, then per round: running, 2 phases, done, result, queued (the regrade).
    assert [seq for seq, _ in rows] == list(range(1, 1 + 1 + 20 * 6))
    assert [kind for _, kind in rows[-6:]] == [
        "status",
        "phase",
        "phase",
        "status",
        "result",
        "status",
    ]
