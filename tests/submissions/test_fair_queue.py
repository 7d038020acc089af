"""Fair queue at the repository level, on SQLite and PostgreSQL: a free worker takes the oldest
submission of a client with nothing running, and the database refuses a second running row of
one client, also when many claimers race."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import alembic_config, upgrade
from app.submissions.models import Submission
from app.submissions.repository import SubmissionRepository
from app.worker.runtime import open_database
from tests.submissions.conftest import add_queued, grader_settings

LEASE = timedelta(seconds=30)


@pytest.fixture
def sessions(tmp_path: Path, database_url: str | None) -> Iterator[sessionmaker[Session]]:
    engine, made = open_database(grader_settings(tmp_path / "data", database_url, workers=8))
    yield made
    engine.dispose()


def claim_next(sessions: sessionmaker[Session], token: str = "t") -> Submission | None:
    with sessions() as session:
        got = SubmissionRepository(session).claim_next(token, "w", LEASE)
        session.commit()
        return got


def finish(sessions: sessionmaker[Session], submission: Submission, token: str = "t") -> None:
    with sessions() as session:
        assert SubmissionRepository(session).finish(
            submission, token, verdict="accepted", score=1.0, report_json="{}",
            test_set_version=1, phases={},
        )  # fmt: skip
        session.commit()


def test_a_client_with_a_running_submission_waits_for_its_turn(sessions: sessionmaker[Session]):
    a1, a2, b1, a3 = add_queued(sessions, 4, clients=["a", "a", "b", "a"])
    first = claim_next(sessions)
    assert first is not None and first.id == a1
    # a2 is older than b1, but its client is running a1.
    second = claim_next(sessions, "t2")
    assert second is not None and second.id == b1
    assert claim_next(sessions, "t3") is None, "every queued submission's client is running"
    finish(sessions, first)
    third = claim_next(sessions, "t4")
    assert third is not None and third.id == a2, "first in, first out within a client"
    assert claim_next(sessions, "t5") is None
    with sessions() as session:
        assert SubmissionRepository(session).get(a3).status == "queued"  # type: ignore[union-attr]


def test_backlogged_clients_take_turns_and_a_newcomer_is_served_next(
    sessions: sessionmaker[Session],
):
    # One worker: two clients flood, then a third sends one. Each worker that frees up serves
    # the client whose turn it is, not the oldest submission: round robin between backlogs,
    # and the newcomer waits for one grading per backlogged client at most, not their floods.
    ids = add_queued(sessions, 7, clients=["a", "a", "a", "b", "b", "b", "d"])
    a1, a2, a3, b1, b2, b3, d1 = ids
    order = []
    for n in range(len(ids)):
        got = claim_next(sessions, f"t{n}")
        assert got is not None
        order.append(got.id)
        finish(sessions, got, f"t{n}")
    assert order == [a1, b1, d1, a2, b2, a3, b3]


def test_a_client_back_from_idle_is_not_charged_for_its_past_flood(
    sessions: sessionmaker[Session],
):
    ids = add_queued(sessions, 4, clients=["a", "a", "a", "a"])
    for n in range(len(ids)):
        got = claim_next(sessions, f"t{n}")
        assert got is not None
        finish(sessions, got, f"t{n}")
    with sessions() as session:
        repo = SubmissionRepository(session)
        for submission_id, client in (("b-1", "b"), ("b-2", "b"), ("a-5", "a")):
            repo.add(
                Submission(
                    id=submission_id, problem_id="p", code="x = 1", code_sha256="-",
                    client=client, request_sha256="-",
                )
            )  # fmt: skip
        session.commit()
    order = []
    for n in range(3):
        got = claim_next(sessions, f"u{n}")
        assert got is not None
        order.append(got.id)
        finish(sessions, got, f"u{n}")
    assert order == ["b-1", "a-5", "b-2"]


def test_a_claim_by_id_respects_the_client_rule(sessions: sessionmaker[Session]):
    a1, a2 = add_queued(sessions, 2, clients=["a", "a"])
    with sessions() as session:
        repo = SubmissionRepository(session)
        assert repo.claim(a1, "t1", "w", LEASE) is not None
        session.commit()
        assert repo.claim(a2, "t2", "w", LEASE) is None
        session.commit()


def test_a_claim_waits_for_a_brief_write_to_its_row_instead_of_passing_it_over(
    sessions: sessionmaker[Session],
):
    # The API notes that a submission's job was sent (an UPDATE of the row) while a worker
    # runs that job: the worker must take the row once that write commits, not skip it and
    # leave it to the sweep (a job is a turn, not an order for that row).
    (submission_id,) = add_queued(sessions, 1)
    got: list[Submission | None] = []
    with sessions() as writer:
        SubmissionRepository(writer).mark_enqueued(submission_id)
        claimer = threading.Thread(target=lambda: got.append(claim_next(sessions)))
        claimer.start()
        time.sleep(0.3)
        writer.commit()
    claimer.join(10)
    assert len(got) == 1 and got[0] is not None and got[0].id == submission_id


def test_the_database_refuses_a_second_running_row_of_one_client(
    sessions: sessionmaker[Session],
):
    a1, a2, b1 = add_queued(sessions, 3, clients=["a", "a", "b"])
    running = text("UPDATE submissions SET status = 'running' WHERE id = :id")
    with sessions() as session:
        session.execute(running, {"id": a1})
        session.execute(running, {"id": b1})
        session.commit()
        with pytest.raises(IntegrityError):
            session.execute(running, {"id": a2})
            session.commit()


def test_a_claim_is_part_of_its_callers_transaction(sessions: sessionmaker[Session]):
    # The claim and its "running" event commit together, or neither does.
    (submission_id,) = add_queued(sessions, 1)
    with sessions() as session:
        assert SubmissionRepository(session).claim_next("t", "w", LEASE) is not None
        session.rollback()
    with sessions() as session:
        repo = SubmissionRepository(session)
        assert repo.get(submission_id).status == "queued"  # type: ignore[union-attr]
        assert [e.kind for e in repo.events_after(submission_id, 0)] == ["status"]


def test_regrades_wait_behind_new_submissions(sessions: sessionmaker[Session]):
    old, other, new = add_queued(sessions, 3, clients=["a", "b", "c"])
    for submission_id in (old, other):
        with sessions() as session:
            repo = SubmissionRepository(session)
            claimed = repo.claim(submission_id, "t", "w", LEASE)
            assert claimed is not None
            session.commit()
        finish(sessions, claimed)
    with sessions() as session:
        # An instructor's bulk regrade: older rows than any new submission.
        assert SubmissionRepository(session).requeue_for_regrade(old) is not None
        assert SubmissionRepository(session).requeue_for_regrade(other) is not None
        session.commit()
    order = [claim_next(sessions, f"t{n}") for n in range(3)]
    assert [s.id if s else None for s in order] == [new, old, other]


def test_an_expired_lease_does_not_block_its_client(sessions: sessionmaker[Session]):
    a1, a2 = add_queued(sessions, 2, clients=["a", "a"])
    with sessions() as session:
        assert SubmissionRepository(session).claim_next("dead", "w", timedelta(seconds=-1))
        session.commit()
    # The worker died: its row is taken over before the client's next one.
    again = claim_next(sessions, "t2")
    assert again is not None and (again.id, again.attempts) == (a1, 2)
    finish(sessions, again, "t2")
    following = claim_next(sessions, "t3")
    assert following is not None and following.id == a2


def test_concurrent_claimers_never_run_two_submissions_of_one_client(
    sessions: sessionmaker[Session],
):
    clients = [f"c{n % 4}" for n in range(48)]
    ids = add_queued(sessions, len(clients), clients=clients)
    graded: list[str] = []
    doubles: list[list[str]] = []
    errors: list[BaseException] = []
    most_running = 0
    lock = threading.Lock()
    done = threading.Event()

    def claimer(n: int) -> None:
        try:
            idle_since = time.monotonic()
            while time.monotonic() - idle_since < 2.0:
                got = claim_next(sessions, f"t{n}")
                if got is None:
                    time.sleep(0.001)
                    continue
                idle_since = time.monotonic()
                time.sleep(0.005)  # grading
                finish(sessions, got, f"t{n}")
                with lock:
                    graded.append(got.id)
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    def watcher() -> None:
        # One statement, one snapshot: two running rows of a client seen together were
        # running together.
        nonlocal most_running
        try:
            while not done.is_set():
                with sessions() as session:
                    running = list(
                        session.execute(
                            text("SELECT client FROM submissions WHERE status = 'running'")
                        ).scalars()
                    )
                most_running = max(most_running, len(running))
                twice = [c for c, k in Counter(running).items() if k > 1]
                if twice:
                    doubles.append(twice)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(8)]
    watching = threading.Thread(target=watcher)
    watching.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watching.join()
    assert not errors, errors
    assert not doubles, f"clients running twice at once: {doubles[:5]} ({len(doubles)} times)"
    assert sorted(graded) == sorted(ids), "every submission graded exactly once"
    assert most_running > 1, "different clients were graded side by side"


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_migration_puts_back_all_but_one_running_row_per_client(
    tmp_path: Path, dialect: str, request: pytest.FixtureRequest
):
    url = None
    if dialect == "postgresql":  # a database of its own: it starts before this revision
        url = request.getfixturevalue("postgres").create_database("tensorjudge_fair_migration")
    engine = make_engine(grader_settings(tmp_path / "data", url))
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0003_event_seq")
    a1, a2, b1 = "sub-a1", "sub-a2", "sub-b1"
    with engine.begin() as conn:  # rows as the previous revision wrote them
        for submission_id, client in ((a1, "a"), (a2, "a"), (b1, "b")):
            conn.execute(
                text(
                    "INSERT INTO submissions (id, problem_id, mode, code, code_sha256, client, "
                    "request_sha256, status, attempts, run, lease_token, created_at) VALUES "
                    "(:id, 'p', 'submit', 'x = 1', '-', :client, '-', 'running', 1, 1, 'x', "
                    ":now)"
                ),
                {"id": submission_id, "client": client, "now": utcnow()},
            )
    upgrade(engine)
    with engine.connect() as conn:
        rows = {r.id: r.status for r in conn.execute(text("SELECT id, status FROM submissions"))}
    assert rows == {a1: "running", a2: "queued", b1: "running"}
    sessions = make_sessionmaker(engine)
    with sessions() as session:  # and they are claimed in the new order like any other
        assert SubmissionRepository(session).claim(a2, "t", "w", LEASE) is None
        assert SubmissionRepository(session).requeue_running(expired_only=False)
        session.commit()
    got = claim_next(sessions)
    assert got is not None and got.id == a1 and got.turn == 0
    engine.dispose()
