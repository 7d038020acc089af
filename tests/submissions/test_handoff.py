"""A grader of this process that is idle when a submission is accepted takes it in the
transaction that inserts it (no queueing, no separate claim), but only where the fair order
would take it next: nothing queued ahead, its client with nothing running. Anything else, a
race included, queues it as before, and a grader set aside is always let go."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from app.submissions.models import Submission, SubmissionEvent
from app.submissions.repository import AdmissionCounts, SubmissionRepository
from app.submissions.schemas import SubmissionCreate
from app.submissions.service import SubmissionService
from app.worker.embedded import EmbeddedPool
from app.worker.runtime import open_database
from tests.submissions.conftest import MakeClient, add_queued, grader_settings
from tests.support.codes import CORRECT

URL = "/api/problems/multi-head-attention/submissions"
MHA = "multi-head-attention"
LEASE = timedelta(seconds=30)


class Recorder:
    """The pool's side of a hand-off, recorded: which grader was set aside, and how it ended."""

    def __init__(self, idle: int = 1) -> None:
        self.idle = idle
        self.given: list[tuple[Submission, str]] = []
        self.cancelled = 0
        self.dispatched: list[str] = []

    def reserve(self) -> Any:
        if self.idle == 0:
            return None
        self.idle -= 1
        recorder = self

        class Reservation:
            """Ended once, as the pool's: a cancel after the give does nothing."""

            worker = "grader-test"
            lease = LEASE
            ended = False

            def give(self, submission: Submission, token: str) -> None:
                assert not self.ended
                self.ended = True
                recorder.given.append((submission, token))

            def cancel(self) -> None:
                if not self.ended:
                    self.ended = True
                    recorder.cancelled += 1
                    recorder.idle += 1

        return Reservation()

    def dispatch(self, submission_id: str) -> None:
        self.dispatched.append(submission_id)


@pytest.fixture
def sessions(tmp_path: Path, database_url: str | None) -> Iterator[sessionmaker[Session]]:
    engine, made = open_database(grader_settings(tmp_path / "data", database_url))
    yield made
    engine.dispose()


def service(
    sessions: sessionmaker[Session], tmp_path: Path, recorder: Recorder
) -> SubmissionService:
    settings = grader_settings(tmp_path / "data", None)
    return SubmissionService(settings, sessions, recorder)


def submit(svc: SubmissionService, client: str, key: str | None = None) -> Submission:
    body = SubmissionCreate(code=CORRECT)
    return svc.create(MHA, body, client=client, idempotency_key=key).submission


def row(sessions: sessionmaker[Session], submission_id: str) -> Submission:
    with sessions() as session:
        found = session.get(Submission, submission_id)
        assert found is not None
        return found


def event_kinds(sessions: sessionmaker[Session], submission_id: str) -> list[tuple[int, str]]:
    with sessions() as session:
        rows = session.scalars(
            select(SubmissionEvent)
            .where(SubmissionEvent.submission_id == submission_id)
            .order_by(SubmissionEvent.seq)
        ).all()
        return [(e.seq, e.data) for e in rows]


def test_nothing_ahead_an_idle_grader_gets_it_claimed(sessions, tmp_path):
    recorder = Recorder()
    accepted = submit(service(sessions, tmp_path, recorder), "alice")
    [(given, token)] = recorder.given
    assert given.id == accepted.id and recorder.dispatched == [] and recorder.cancelled == 0
    stored = row(sessions, accepted.id)
    assert (stored.status, stored.attempts, stored.worker) == ("running", 1, "grader-test")
    assert stored.lease_token == token and stored.started_at is not None
    assert stored.lease_expires_at is not None and stored.lease_expires_at > utcnow()
    # What a student following the events reads is what a claim leaves.
    assert event_kinds(sessions, accepted.id) == [
        (1, '{"status": "queued"}'),
        (2, '{"status": "running", "attempt": 1}'),
    ]


def test_someone_queued_ahead_keeps_their_turn(sessions, tmp_path):
    [ahead] = add_queued(sessions, 1, clients=["bob"])
    recorder = Recorder()
    accepted = submit(service(sessions, tmp_path, recorder), "alice")
    assert recorder.given == [] and recorder.cancelled == 1
    assert recorder.dispatched == [accepted.id]
    assert row(sessions, accepted.id).status == "queued"
    assert row(sessions, ahead).status == "queued"


def test_a_client_with_a_running_submission_is_queued(sessions, tmp_path):
    recorder = Recorder(idle=2)
    svc = service(sessions, tmp_path, recorder)
    first = submit(svc, "alice")
    second = submit(svc, "alice")
    assert [s.id for s, _ in recorder.given] == [first.id]
    assert recorder.dispatched == [second.id] and recorder.cancelled == 1
    assert row(sessions, second.id).status == "queued"


def test_no_idle_grader_queues_it(sessions, tmp_path):
    recorder = Recorder(idle=0)
    accepted = submit(service(sessions, tmp_path, recorder), "alice")
    assert recorder.dispatched == [accepted.id] and recorder.given == []
    assert row(sessions, accepted.id).status == "queued"


def test_a_claim_racing_the_insert_sends_it_to_the_queue(sessions, tmp_path, monkeypatch):
    # The client's running row appears between the admission read and the insert: the database
    # refuses a second running row for the client, and the submission is queued instead.
    [other] = add_queued(sessions, 1, clients=["alice"])
    with sessions() as session:
        session.execute(
            update(Submission)
            .where(Submission.id == other)
            .values(status="running", lease_token="held", lease_expires_at=utcnow() + LEASE)
        )
        session.commit()
    read = SubmissionRepository.admission_counts

    def stale(self: SubmissionRepository, client: str, since: Any) -> AdmissionCounts:
        counts = read(self, client, since)
        return AdmissionCounts(counts.recent, counts.oldest, counts.active, 0, False)

    monkeypatch.setattr(SubmissionRepository, "admission_counts", stale)
    recorder = Recorder()
    accepted = submit(service(sessions, tmp_path, recorder), "alice")
    assert recorder.given == [] and recorder.cancelled == 1 and recorder.idle == 1
    assert recorder.dispatched == [accepted.id]
    assert row(sessions, accepted.id).status == "queued"
    assert event_kinds(sessions, accepted.id) == [(1, '{"status": "queued"}')]


def test_a_replayed_request_lets_its_grader_go(sessions, tmp_path):
    recorder = Recorder(idle=2)
    svc = service(sessions, tmp_path, recorder)
    first = submit(svc, "alice", key="k1")
    again = submit(svc, "alice", key="k1")
    assert again.id == first.id
    assert len(recorder.given) == 1 and recorder.cancelled == 1 and recorder.idle == 1


def wait_idle(pool: EmbeddedPool, count: int) -> None:
    deadline = time.monotonic() + 10
    while pool.idle != count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.idle == count


def test_the_pool_sets_aside_only_threads_that_wait(make_client: MakeClient):
    api = make_client(workers=2, poll_seconds=5.0)
    pool = api.app.state.dispatcher  # type: ignore[attr-defined]
    assert isinstance(pool, EmbeddedPool)
    wait_idle(pool, 2)
    first, second = pool.reserve(), pool.reserve()
    assert first is not None and second is not None
    assert pool.reserve() is None and pool.idle == 0  # both set aside
    # A dispatch cannot wake a thread set aside: nobody takes it until one is let go.
    [queued] = add_queued(api.app.state.sessions, 1)  # type: ignore[attr-defined]
    pool.dispatch(queued)
    time.sleep(0.3)
    assert status_of(api, queued) == "queued"
    first.cancel()
    first.cancel()  # ending twice lets one thread go, once
    deadline = time.monotonic() + 10
    while status_of(api, queued) == "queued" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert status_of(api, queued) != "queued"
    second.cancel()
    wait_idle(pool, 2)


def status_of(api: Any, submission_id: str) -> str:
    with api.app.state.sessions() as session:
        found = session.get(Submission, submission_id)
        return str(found.status)


def test_a_submission_accepted_while_a_grader_waits_is_graded_without_a_claim(
    make_client: MakeClient,
):
    api = make_client(workers=2, poll_seconds=5.0, wall_seconds=10.0)
    pool = api.app.state.dispatcher  # type: ignore[attr-defined]
    engine = api.app.state.sessions.kw["bind"]  # type: ignore[attr-defined]
    claims: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "attempts=(submissions.attempts" in statement.replace(" ", "").replace("\n", ""):
            claims.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    wait_idle(pool, 2)
    done = api.post(URL, params={"wait": 30}, json={"code": CORRECT}).json()
    assert done["status"] == "done" and done["verdict"] == "accepted"
    assert done["attempts"] == 1
    assert claims == []  # taken in its insert, not claimed from the queue
