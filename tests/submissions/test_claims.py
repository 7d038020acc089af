"""The exactly-once machinery on both databases: concurrent claims, lease guards, unique runs."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from app.db.engine import normalize_url
from app.submissions.models import Grading, Submission
from app.submissions.repository import SubmissionRepository
from app.worker.runtime import open_database
from tests.submissions.conftest import add_queued, grader_settings

LEASE = timedelta(seconds=30)


@pytest.fixture
def sessions(tmp_path: Path, database_url: str | None) -> Iterator[sessionmaker[Session]]:
    engine, made = open_database(grader_settings(tmp_path / "data", database_url, workers=8))
    yield made
    engine.dispose()


def finish(repo: SubmissionRepository, submission: Submission, token: str) -> bool:
    return repo.finish(
        submission,
        token,
        verdict="accepted",
        score=1.0,
        report_json="{}",
        test_set_version=1,
        phases={"sandbox": 0.1},
    )


def test_concurrent_claimers_take_each_submission_exactly_once(sessions: sessionmaker[Session]):
    ids = add_queued(sessions, 60)
    claimed: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def claimer(n: int) -> None:
        try:
            while True:
                with sessions() as session:
                    got = SubmissionRepository(session).claim_next(f"t{n}", f"w{n}", LEASE)
                    session.commit()
                if got is None:
                    return
                with lock:
                    claimed.append(got.id)
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(claimed) == ids
    assert Counter(claimed).most_common(1)[0][1] == 1


def test_an_added_row_gets_its_column_defaults_in_the_database_and_on_the_object(
    sessions: sessionmaker[Session],
):
    # add() inserts without the ORM's unit of work: the defaults it would apply still apply.
    fresh = Submission(
        id="sub-defaults", problem_id="p", code="x = 1", code_sha256="-", client="c",
        request_sha256="-",
    )  # fmt: skip
    before = utcnow()
    with sessions() as session:
        SubmissionRepository(session).add(fresh)
        session.commit()
    assert (fresh.mode, fresh.status, fresh.attempts, fresh.run) == ("submit", "queued", 0, 1)
    assert fresh.created_at is not None and fresh.created_at >= before
    assert fresh.verdict is None and fresh.idempotency_key is None
    with sessions() as session:
        stored = SubmissionRepository(session).get("sub-defaults")
        assert stored is not None
        assert (stored.mode, stored.status, stored.attempts, stored.run) == (
            "submit",
            "queued",
            0,
            1,
        )
        assert stored.created_at == fresh.created_at
        assert [e.kind for e in SubmissionRepository(session).events_after(stored.id, 0)] == [
            "status"
        ]


def test_result_is_stored_only_under_the_current_lease(sessions: sessionmaker[Session]):
    (submission_id,) = add_queued(sessions, 1)
    with sessions() as session:
        repo = SubmissionRepository(session)
        first = repo.claim(submission_id, "old", "w1", LEASE)
        assert first is not None and first.attempts == 1
        session.commit()
        # Held under a live lease: a redelivered job cannot take it.
        assert repo.claim(submission_id, "dup", "w2", LEASE) is None
        # The worker is presumed dead: its row goes back to the queue and is claimed again.
        assert repo.requeue_running(expired_only=False) == [submission_id]
        second = repo.claim(submission_id, "new", "w2", LEASE)
        assert second is not None and second.attempts == 2
        session.commit()
        assert not finish(repo, first, "old")
        session.rollback()
        assert finish(repo, second, "new")
        session.commit()
        assert not finish(repo, second, "new"), "a second result for the same claim"
        session.rollback()
        assert repo.claim(submission_id, "late", "w3", LEASE) is None, "done is final"
        assert len(repo.gradings_for(submission_id)) == 1
        stored = repo.get(submission_id)
        assert stored is not None and stored.status == "done" and stored.lease_token is None


def test_expired_leases_are_requeued_and_live_ones_are_not(sessions: sessionmaker[Session]):
    live, dead = add_queued(sessions, 2)
    with sessions() as session:
        repo = SubmissionRepository(session)
        assert repo.claim(live, "a", "w", LEASE) is not None
        assert repo.claim(dead, "b", "w", timedelta(seconds=-1)) is not None
        session.commit()
        assert repo.requeue_running(expired_only=True) == [dead]
        # An expired lease can also be taken over directly by a redelivered job.
        assert repo.claim(dead, "c", "w", LEASE) is not None
        session.commit()


def test_the_database_refuses_a_second_grading_of_one_run(sessions: sessionmaker[Session]):
    (submission_id,) = add_queued(sessions, 1)
    with sessions() as session:
        for attempt in (1, 2):
            session.add(
                Grading(
                    submission_id=submission_id,
                    run=1,
                    attempt=attempt,
                    verdict="accepted",
                    score=1.0,
                    report="{}",
                )
            )
        with pytest.raises(IntegrityError):
            session.commit()


def test_unsent_rows_are_taken_once(sessions: sessionmaker[Session]):
    ids = add_queued(sessions, 3)
    with sessions() as session:
        repo = SubmissionRepository(session)
        repo.mark_enqueued(ids[0])
        taken = repo.take_unsent(timedelta(0), timedelta(hours=1))
        session.commit()
        assert sorted(taken) == ids[1:]
        assert repo.take_unsent(timedelta(0), timedelta(hours=1)) == []


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path: Path):
    engine, _ = open_database(grader_settings(tmp_path / "data", None))
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert int(conn.exec_driver_sql("PRAGMA busy_timeout").scalar() or 0) >= 5000
        assert engine.url.database == str(tmp_path / "data" / "grader.sqlite3")
    finally:
        engine.dispose()


def test_plain_postgresql_urls_use_psycopg_3():
    assert normalize_url("postgresql://u:p@h:5/db") == "postgresql+psycopg://u:p@h:5/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"
