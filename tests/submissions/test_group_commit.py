"""Accepts that wait for SQLite's write turn are committed together (app.db.group_commit): one
leader inserts the waiting batch in one transaction and commits once, and each caller gets its
own outcome, an error included, which reaches that caller only."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.core.errors import ApiError
from app.db.engine import make_engine, make_sessionmaker, write_turn
from app.db.group_commit import CommitGroup, commit_group
from app.submissions.models import Submission, SubmissionEvent
from app.submissions.schemas import SubmissionCreate
from app.submissions.service import Accepted, SubmissionService
from app.worker.runtime import open_database
from tests.submissions.conftest import grader_settings
from tests.support.codes import CORRECT, WRONG

MHA = "multi-head-attention"
T = TypeVar("T")


class Queued:
    """Dispatches recorded; no grader idle, so every accept inserts a queued row."""

    def __init__(self) -> None:
        self.dispatched: list[str] = []

    def reserve(self) -> None:
        return None

    def dispatch(self, submission_id: str) -> None:
        self.dispatched.append(submission_id)


def count_commits(engine: Engine) -> list[int]:
    commits: list[int] = []
    event.listen(engine, "commit", lambda connection: commits.append(1))
    return commits


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the writers did not queue"
        time.sleep(0.005)


def in_one_batch(
    engine: Engine, group: CommitGroup, calls: list[Callable[[], T]]
) -> list[Future[T]]:
    """Runs ``calls`` each on its own thread while this thread holds the write turn, in order
    (each queued before the next starts: the first leads), then lets them write."""
    pool = ThreadPoolExecutor(max_workers=len(calls))
    futures: list[Future[T]] = []
    with write_turn(engine):
        for n, call in enumerate(calls, start=1):
            futures.append(pool.submit(call))
            wait_for(lambda n=n: group.waiting == n)  # type: ignore[misc]
    pool.shutdown(wait=True)
    return futures


# -- the group itself, on a plain table ----------------------------------------------------------


@pytest.fixture
def table(tmp_path: Path) -> Iterator[tuple[Engine, sessionmaker[Session]]]:
    engine = make_engine(grader_settings(tmp_path / "data", None))
    with engine.begin() as connection:
        connection.execute(
            text(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, who TEXT UNIQUE, parent INTEGER"
                " REFERENCES t (id) DEFERRABLE INITIALLY DEFERRED)"
            )
        )
    yield engine, make_sessionmaker(engine)
    engine.dispose()


def stored(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.execute(text("SELECT who FROM t ORDER BY id")).scalars())


@pytest.mark.parametrize("failing", [0, 3], ids=["the-leader-fails", "a-follower-fails"])
def test_one_writers_error_reaches_that_writer_only(table: Any, failing: int) -> None:
    """Six writers in one batch; one inserts its row and then fails. It alone gets its error,
    its row is not stored, every other row is, all in one commit."""
    engine, sessions = table
    group = commit_group(sessions)
    commits = count_commits(engine)

    def writer(n: int) -> Callable[[], str]:
        def write(session: Session) -> None:
            session.execute(text("INSERT INTO t (who) VALUES (:who)"), {"who": f"w{n}"})
            if n == failing:
                raise ValueError(f"w{n} is refused")

        def call() -> str:
            with sessions() as session:
                group.commit(session, write)
            return f"w{n}"

        return call

    futures = in_one_batch(engine, group, [writer(n) for n in range(6)])
    for n, future in enumerate(futures):
        if n == failing:
            with pytest.raises(ValueError, match=f"w{n} is refused"):
                future.result()
        else:
            assert future.result() == f"w{n}"
    assert stored(engine) == [f"w{n}" for n in range(6) if n != failing]
    assert len(commits) == 1
    assert group.waiting == 0


def test_a_row_refused_only_at_commit_fails_its_writer_only(table: Any) -> None:
    """A writer whose row breaks a constraint checked at COMMIT (a deferred foreign key) fails
    the batch's commit: the others are committed each on its own, and it alone is told."""
    engine, sessions = table
    group = commit_group(sessions)

    def call(n: int) -> Callable[[], None]:
        parent = 999 if n == 1 else None  # no such row

        def write(session: Session) -> None:
            session.execute(
                text("INSERT INTO t (who, parent) VALUES (:who, :parent)"),
                {"who": f"w{n}", "parent": parent},
            )

        def run() -> None:
            with sessions() as session:
                group.commit(session, write)

        return run

    futures = in_one_batch(engine, group, [call(n) for n in range(3)])
    futures[0].result()
    futures[2].result()
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        futures[1].result()
    assert stored(engine) == ["w0", "w2"]
    assert group.waiting == 0


# -- accepting submissions ----------------------------------------------------------------------


@pytest.fixture
def accepting(tmp_path: Path) -> Iterator[tuple[Engine, SubmissionService, Queued]]:
    settings = grader_settings(tmp_path / "data", None)
    engine, sessions = open_database(settings)
    dispatcher = Queued()
    yield engine, SubmissionService(settings, sessions, dispatcher), dispatcher
    engine.dispose()


def accept(
    service: SubmissionService, client: str, code: str = CORRECT, key: str | None = None
) -> Callable[[], Accepted]:
    body = SubmissionCreate(code=code)
    return lambda: service.create(MHA, body, client=client, idempotency_key=key)


def test_concurrent_accepts_are_committed_together(accepting: Any) -> None:
    """Eight students' accepts wait for the turn a grader holds: one commit stores them all,
    each with its own queued event, each dispatched once."""
    engine, service, dispatcher = accepting
    commits = count_commits(engine)
    group = commit_group(service.sessions)
    futures = in_one_batch(engine, group, [accept(service, f"s{n}") for n in range(8)])
    ids = [future.result().submission.id for future in futures]
    assert len(commits) == 1 < len(ids)
    assert sorted(dispatcher.dispatched) == sorted(ids)
    with service.sessions() as session:
        rows = session.scalars(select(Submission.client).where(Submission.id.in_(ids))).all()
        assert sorted(rows) == sorted(f"s{n}" for n in range(8))
        events = session.execute(
            select(SubmissionEvent.submission_id, func.count()).group_by(
                SubmissionEvent.submission_id
            )
        ).all()
        assert dict(events) == {i: 1 for i in ids}


def test_idempotency_stays_exact_inside_a_batch(accepting: Any) -> None:
    """In one batch: a retry of the same request is answered with the first one's row; the
    same key for a different request is refused, to that caller only; the others are stored."""
    engine, service, _ = accepting
    group = commit_group(service.sessions)
    calls = [
        accept(service, "alice", key="k1"),
        accept(service, "bob"),
        accept(service, "alice", key="k1"),  # the same request again
        accept(service, "alice", code=WRONG, key="k1"),  # another request, the same key
        accept(service, "carol"),
    ]
    first, bob, again, reused, carol = in_one_batch(engine, group, calls)
    assert not first.result().replayed
    assert again.result().replayed and again.result().submission.id == first.result().submission.id
    with pytest.raises(ApiError) as refused:
        reused.result()
    assert refused.value.body.error.code == "idempotency_key_reused"
    with service.sessions() as session:
        clients = session.scalars(select(Submission.client).order_by(Submission.client)).all()
    assert clients == ["alice", "bob", "carol"]
    assert not bob.result().replayed and not carol.result().replayed


def test_a_lone_writer_commits_alone(accepting: Any) -> None:
    """Nobody waiting: each accept leads a batch of one, one commit each."""
    engine, service, _ = accepting
    commits = count_commits(engine)
    for n in range(3):
        accept(service, f"s{n}")()
    assert len(commits) == 3
