"""Every SQL statement of the submissions feature.

State changes that workers race on are single conditional UPDATEs (compare-and-set on
``status`` and ``lease_token``), so they are atomic on SQLite and PostgreSQL alike without
holding a read-then-write transaction open.

The statements every graded submission runs (insert, claim, events, lease-guarded updates,
the grading row) are Core statements on the session's connection, built once: through the
ORM (unit of work, ORM-enabled DML, identity map) they cost several times the SQL itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    Table,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.submissions.models import Grading, Submission, SubmissionEvent

EVENTS = cast(Table, SubmissionEvent.__table__)


@dataclass(frozen=True)
class AdmissionCounts:
    recent: int  # the client's submissions created since the rate window began
    oldest: datetime | None  # the oldest of them
    active: int  # queued or running, every client's (what ``GRADER_QUEUE_MAX`` caps)
    queued: int  # waiting for a grader, every client's
    client_running: bool  # the client has one being graded


# session.info key: {submission id: event kinds} this transaction wrote (see
# app.submissions.notices.announce_event_commits, which wakes their event streams on commit).
EVENTS_WRITTEN = "tensorjudge.events_written"
SUBMISSIONS = cast(Table, Submission.__table__)
GRADINGS = cast(Table, Grading.__table__)

QUEUED = "queued"
RUNNING = "running"
DONE = "done"
# Claims that lost a race for one client (the database refused a second running row of it)
# try again this many times; each retry sees the winner's committed row and passes over it.
CLAIM_RETRIES = 5


class SubmissionRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def _connection(self) -> Connection:
        """The transaction's connection, for Core statements. Objects the caller added to the
        session are flushed first, as ``Session.execute`` would (an event needs its row)."""
        self.session.flush()
        return self.session.connection()

    # -- reads ---------------------------------------------------------------------------------

    def get(self, submission_id: str) -> Submission | None:
        return self.session.get(Submission, submission_id, populate_existing=True)

    def find_by_idempotency_key(self, client: str, key: str) -> Submission | None:
        stmt = select(Submission).where(
            Submission.client == client, Submission.idempotency_key == key
        )
        return self.session.scalars(stmt).first()

    def next_claimable(self) -> str | None:
        """The submission ``claim_next`` would take now, if any (a read: no write lock)."""
        stmt = _statement(("claimable",), lambda: select(_fair_next(lock=False)))
        found = self._connection().execute(stmt, {"p_now": utcnow()}).scalar()
        return None if found is None else str(found)

    def count_active(self) -> int:
        stmt = select(func.count()).where(Submission.status.in_((QUEUED, RUNNING)))
        return int(self.session.scalar(stmt) or 0)

    def queued_ahead(self, row: Submission) -> int:
        """Queued submissions ahead of ``row`` in fair order (a lower round, or its round and
        older)."""
        s = Submission
        ahead = self.session.scalar(
            select(func.count()).where(
                s.status == QUEUED,
                or_(s.turn < row.turn, and_(s.turn == row.turn, s.created_at < row.created_at)),
            )
        )
        return int(ahead or 0)

    def grading_pace(self, sample: int) -> float | None:
        """Gradings per second lately: the last ``sample`` gradings, read by the primary key
        (None before there are two)."""
        recent = list(
            self.session.scalars(
                select(Grading.finished_at).order_by(Grading.id.desc()).limit(sample)
            )
        )
        pace = None
        if len(recent) >= 2:
            span = (utcnow() - min(recent)).total_seconds()
            pace = len(recent) / span if span > 0 else None
        return pace

    def queue_stats(self) -> tuple[int, int, datetime | None]:
        """Queued and running submissions, and when the oldest queued one was created."""
        stmt = select(
            func.count().filter(Submission.status == QUEUED),
            func.count().filter(Submission.status == RUNNING),
            func.min(Submission.created_at).filter(Submission.status == QUEUED),
        ).where(Submission.status.in_((QUEUED, RUNNING)))
        queued, running, oldest = self.session.execute(stmt).one()
        if isinstance(oldest, str):  # SQLite returns aggregates of timestamps as text
            oldest = datetime.fromisoformat(oldest)
        if oldest is not None and oldest.tzinfo is None:
            oldest = oldest.replace(tzinfo=utcnow().tzinfo)
        return int(queued or 0), int(running or 0), oldest

    def recent_by_client(self, client: str, since: datetime) -> tuple[int, datetime | None]:
        """How many submissions ``client`` created since ``since``, and the oldest of them."""
        counts = self.admission_counts(client, since)
        return counts.recent, counts.oldest

    def admission_counts(self, client: str, since: datetime) -> AdmissionCounts:
        """What accepting a submission checks, in one round trip (``AdmissionCounts``)."""
        stmt = _statement(("admission",), _admission_statement)
        params = {"p_client": client, "p_since": since}
        count, oldest, active, queued, running = self._connection().execute(stmt, params).one()
        if isinstance(oldest, str):  # SQLite returns aggregates of timestamps as text
            oldest = datetime.fromisoformat(oldest)
        if oldest is not None and oldest.tzinfo is None:
            oldest = oldest.replace(tzinfo=utcnow().tzinfo)
        return AdmissionCounts(
            int(count or 0), oldest, int(active or 0), int(queued or 0), bool(running)
        )

    def events_after(self, submission_id: str, after_seq: int) -> Sequence[SubmissionEvent]:
        """The submission's events numbered above ``after_seq``, in order."""
        stmt = (
            select(SubmissionEvent)
            .where(SubmissionEvent.submission_id == submission_id, SubmissionEvent.seq > after_seq)
            .order_by(SubmissionEvent.seq)
        )
        return self.session.scalars(stmt).all()

    def gradings_for(self, submission_id: str) -> Sequence[Grading]:
        stmt = select(Grading).where(Grading.submission_id == submission_id).order_by(Grading.id)
        return self.session.scalars(stmt).all()

    # -- writes (the caller commits) -----------------------------------------------------------

    def add(self, submission: Submission) -> None:
        """Insert a new submission (left out of the session: callers only read it back).

        Its ``turn`` (start-time fair queueing, one grading per round): one round after its
        client's latest queued or running submission, and no earlier than the round being
        graded now. So a client's flood takes consecutive rounds, other clients' backlogs
        interleave with it, and a client with nothing pending joins the current round: it is
        served after at most one grading per client already in that round, not after floods.
        Concurrent inserts may share a round; creation order breaks the tie."""
        self._insert(submission, [("status", {"status": QUEUED})])

    def add_claimed(
        self, submission: Submission, token: str, worker: str, lease: timedelta
    ) -> None:
        """Insert a new submission already claimed under ``token``: for a grader that is idle
        when nothing is queued ahead and the client has nothing running (what ``claim_next``
        would then take first), the insert and the claim are one transaction. Its row and
        events end as a claim leaves them. Raises IntegrityError when a concurrent claim gave
        the client a running submission first (the database allows one per client)."""
        now = utcnow()
        submission.status = RUNNING
        submission.attempts = 1
        submission.lease_token = token
        submission.lease_expires_at = now + lease
        submission.worker = worker
        submission.started_at = now
        started = {"status": RUNNING, "attempt": 1}
        self._insert(submission, [("status", {"status": QUEUED}), ("status", started)])

    def _insert(self, submission: Submission, events: list[tuple[str, dict[str, Any]]]) -> None:
        connection = self._connection()
        turn = connection.execute(
            _statement(("turn",), _turn_statement), {"p_client": submission.client}
        ).scalar_one()
        submission.turn = int(turn)
        stmt = _statement(("insert", "submissions"), lambda: insert(SUBMISSIONS))
        connection.execute(stmt, [_insert_values(submission)])
        self.add_events(submission.id, events, last=0)

    def add_event(self, submission_id: str, kind: str, data: dict[str, Any]) -> None:
        self.add_events(submission_id, [(kind, data)])

    def add_events(
        self,
        submission_id: str,
        events: Sequence[tuple[str, dict[str, Any]]],
        last: int | None = None,
    ) -> None:
        """Append events in order, numbered on from the submission's last one (``last`` when the
        caller knows it: a submission it has just inserted has none), else counted by the insert.

        Two transactions never number the same submission's events at once: every writer first
        inserts the submission or updates its row in the same transaction (a claim, a lease-
        guarded update, a requeue, a regrade), which PostgreSQL's row lock and SQLite's single
        writer serialize until commit. The unique (submission_id, seq) makes a caller that
        broke this fail rather than number twice."""
        connection = self._connection()
        now = utcnow()
        if last is None:
            # Numbered by the database in the insert itself, one row after the other (each
            # sees the rows before it): one statement instead of a read and an insert.
            rows = [
                {"p_submission_id": submission_id, "p_kind": kind, "p_data": json.dumps(data),
                 "p_created_at": now}
                for kind, data in events
            ]  # fmt: skip
            connection.execute(_statement(("append", "events"), _append_event_statement), rows)
        else:
            rows = [
                {"submission_id": submission_id, "seq": last + n, "kind": kind,
                 "data": json.dumps(data), "created_at": now}
                for n, (kind, data) in enumerate(events, start=1)
            ]  # fmt: skip
            connection.execute(_statement(("insert", "events"), lambda: insert(EVENTS)), rows)
        written = self.session.info.setdefault(EVENTS_WRITTEN, {})
        written.setdefault(submission_id, set()).update(kind for kind, _ in events)

    def claim_next(self, token: str, worker: str, lease: timedelta) -> Submission | None:
        """Take the next submission in fair order (see ``_fair_next``), or None when every
        claimable one belongs to a client that already has one running. Safe against
        concurrent claimers: the database itself refuses a second running row per client."""
        dialect = self.session.get_bind().dialect.name
        stmt = _statement(("claim_next", dialect), lambda: _claim_next_statement(dialect))
        for _ in range(CLAIM_RETRIES):
            try:
                return self._claim(stmt, {}, token, worker, lease)
            except IntegrityError:
                continue  # another claimer took this client's turn first
        return None

    def claim(
        self, submission_id: str, token: str, worker: str, lease: timedelta
    ) -> Submission | None:
        """Take this submission if it is queued, or running under a lease that has expired,
        and no other submission of its client is running."""
        stmt = _statement(
            ("claim",), lambda: _claim_statement(SUBMISSIONS.c.id == bindparam("p_id"))
        )
        try:
            return self._claim(stmt, {"p_id": submission_id}, token, worker, lease)
        except IntegrityError:
            return None  # a concurrent claim of the same client won

    def _claim(
        self, stmt: Any, params: dict[str, Any], token: str, worker: str, lease: timedelta
    ) -> Submission | None:
        """Raises IntegrityError (the transaction stays usable) when a concurrent claim of the
        same client committed first: the two passed the ``_client_idle`` check together, and
        the unique index on running rows per client refused the later one."""
        now = utcnow()
        params |= {"p_now": now, "p_expires": now + lease, "p_token": token, "p_worker": worker}
        connection = self._connection()
        if connection.dialect.name == "postgresql":
            # A savepoint, so a refused UPDATE does not abort the caller's transaction.
            with connection.begin_nested():
                row = connection.execute(stmt, params).one_or_none()
        else:
            # SQLite undoes just the refused statement and keeps the transaction; and through
            # pysqlite, releasing a savepoint that opened the transaction would commit it.
            row = connection.execute(stmt, params).one_or_none()
        if row is None:
            return None
        # Detached, like every row a repository hands out once its session closes.
        submission = Submission(**row._asdict())
        # The worker stays in the row for operators; the event is what a student reads.
        self.add_event(submission.id, "status", {"status": RUNNING, "attempt": submission.attempts})
        return submission

    def _update_leased(self, submission_id: str, token: str, **values: Any) -> bool:
        """Update a running submission only while ``token`` holds its lease: every write a
        grader makes goes through this guard, so a grader that lost its lease writes nothing."""
        columns = tuple(sorted(values))
        stmt = _statement(("leased", *columns), lambda: _leased_statement(columns))
        params = {"p_id": submission_id, "p_token": token}
        params |= {f"v_{column}": value for column, value in values.items()}
        return bool(self._connection().execute(stmt, params).rowcount)

    def renew_lease(self, submission_id: str, token: str, lease: timedelta) -> bool:
        return self._update_leased(submission_id, token, lease_expires_at=utcnow() + lease)

    def finish(
        self,
        submission: Submission,
        token: str,
        *,
        verdict: str,
        score: float,
        report_json: str,
        test_set_version: int | None,
        phases: dict[str, float],
        finished_at: datetime | None = None,
    ) -> bool:
        """Store the result if ``token`` still holds the lease. False: someone else owns it now.

        The guarded UPDATE, the ``gradings`` row (unique per run) and the events are one
        transaction: the caller commits on True and rolls back on False.
        """
        now = finished_at or utcnow()
        finished = self._update_leased(
            submission.id,
            token,
            status=DONE,
            verdict=verdict,
            score=score,
            report=report_json,
            test_set_version=test_set_version,
            finished_at=now,
            lease_token=None,
            lease_expires_at=None,
        )
        if not finished:
            return False
        grading = {
            "submission_id": submission.id,
            "run": submission.run,
            "attempt": submission.attempts,
            "test_set_version": test_set_version,
            "verdict": verdict,
            "score": score,
            "report": report_json,
            "worker": submission.worker,
            "started_at": submission.started_at,
            "finished_at": now,
        }
        self._connection().execute(
            _statement(("insert", "gradings"), lambda: insert(GRADINGS)), [grading]
        )
        self.add_events(
            submission.id,
            [
                *(("phase", {"phase": p, "seconds": s}) for p, s in phases.items()),
                ("status", {"status": DONE, "verdict": verdict}),
                # The SSE endpoint sends the stored submission itself for this event.
                ("result", {"verdict": verdict, "score": score, "run": submission.run}),
            ],
        )
        return True

    def release(self, submission_id: str, token: str, reason: str) -> bool:
        """Give a claimed submission back to the queue (the grader failed, not the code)."""
        if not self._update_leased(
            submission_id,
            token,
            status=QUEUED,
            lease_token=None,
            lease_expires_at=None,
            enqueued_at=None,
        ):
            return False
        self.add_event(submission_id, "status", {"status": QUEUED, "retry": reason})
        return True

    def requeue_running(self, *, expired_only: bool) -> list[str]:
        """Hand running submissions back to the queue: all of them (embedded start-up, where
        this process is the only grader), or only those whose worker stopped renewing its lease.
        """
        conditions = [Submission.status == RUNNING]
        if expired_only:
            conditions.append(Submission.lease_expires_at < utcnow())
        stmt = (
            update(Submission)
            .where(*conditions)
            .values(status=QUEUED, lease_token=None, lease_expires_at=None, enqueued_at=None)
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
        ids = list(self.session.execute(stmt).scalars())
        for submission_id in ids:
            self.add_event(submission_id, "status", {"status": QUEUED, "requeued": True})
        return ids

    def mark_enqueued(self, submission_id: str) -> None:
        stmt = (
            update(Submission)
            .where(Submission.id == submission_id)
            .values(enqueued_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        self.session.execute(stmt)

    def take_unsent(self, older_than: timedelta, resend_after: timedelta) -> list[str]:
        """Queued rows with no job in the broker (never sent, or sent so long ago that the job
        may be lost). Marks them sent, so concurrent sweepers do not both resend a row."""
        now = utcnow()
        stmt = (
            update(Submission)
            .where(
                Submission.status == QUEUED,
                Submission.created_at < now - older_than,
                or_(
                    Submission.enqueued_at.is_(None),
                    Submission.enqueued_at < now - resend_after,
                ),
            )
            .values(enqueued_at=now)
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
        return list(self.session.execute(stmt).scalars())

    def requeue_for_regrade(
        self, submission_id: str, *, max_active: int | None = None
    ) -> Submission | None:
        """Queue a finished submission for another grading run: ``run`` + 1, the previous
        result cleared here and kept in ``gradings``. None unless it is ``done`` and,
        with ``max_active``, fewer than that many submissions are queued or running.

        The cap is a condition of the UPDATE itself (counted like ``admission_counts``): one
        statement, not a read and a later write. As for a new submission, admissions racing at
        the same instant on PostgreSQL (read committed) may each pass the cap by one."""
        row = SUBMISSIONS.c
        conditions = [row.id == submission_id, row.status == DONE]
        if max_active is not None:
            active = _active_count(SUBMISSIONS.alias("active")).scalar_subquery()
            conditions.append(active < max_active)
        stmt = (
            update(SUBMISSIONS)
            .where(*conditions)
            .values(
                status=QUEUED,
                run=row.run + 1,
                # max_attempts bounds the attempts of one run, so a regrade starts afresh.
                attempts=0,
                lease_token=None,
                lease_expires_at=None,
                enqueued_at=None,
                verdict=None,
                score=None,
                report=None,
                test_set_version=None,
                started_at=None,
                finished_at=None,
            )
            # The whole row in the same statement, as a claim does: no second read.
            .returning(*SUBMISSIONS.columns)
        )
        requeued = self._connection().execute(stmt).one_or_none()
        if requeued is None:
            return None
        submission = Submission(**requeued._asdict())
        self.add_event(submission_id, "status", {"status": QUEUED, "regrade": submission.run})
        return submission


# -- statements built once ---------------------------------------------------------------------
# Building a statement and its cache key took most of the CPU of running it (about 0.3 ms of
# 0.4 ms for the admission counts): the hot ones are built once, with bound parameters.

_STATEMENTS: dict[tuple[str, ...], Any] = {}


def _statement(key: tuple[str, ...], build: Callable[[], Any]) -> Any:
    stmt = _STATEMENTS.get(key)
    if stmt is None:  # two threads may both build it: the same statement either way
        stmt = _STATEMENTS[key] = build()
    return stmt


def _append_event_statement() -> Any:
    """An event numbered one past its submission's last (``add_events``)."""
    row = EVENTS.c
    numbered = select(
        bindparam("p_submission_id", type_=row.submission_id.type),
        func.coalesce(func.max(row.seq), 0) + 1,
        bindparam("p_kind", type_=row.kind.type),
        bindparam("p_data", type_=row.data.type),
        bindparam("p_created_at", type_=row.created_at.type),
    ).where(row.submission_id == bindparam("p_submission_id", type_=row.submission_id.type))
    return insert(EVENTS).from_select(
        ["submission_id", "seq", "kind", "data", "created_at"], numbered
    )


def _insert_values(submission: Submission) -> dict[str, Any]:
    """The new row's columns: those set on ``submission``, and for the others their column
    default, which is also set on ``submission`` (as an ORM flush would)."""
    values: dict[str, Any] = {}
    for column in SUBMISSIONS.columns:
        if column.key in submission.__dict__:
            values[column.key] = submission.__dict__[column.key]
            continue
        default = column.default
        if default is not None and (default.is_scalar or default.is_callable):
            value = default.arg if default.is_scalar else default.arg(None)  # type: ignore[attr-defined]
            setattr(submission, column.key, value)
            values[column.key] = value
    return values


def _active_count(table: Any = SUBMISSIONS) -> Any:
    """Submissions that hold a place in the queue: what ``GRADER_QUEUE_MAX`` caps. ``table``:
    an alias where the count is a subquery of a statement on ``submissions`` itself, which
    would otherwise correlate to the outer row and count just that one."""
    return select(func.count()).select_from(table).where(table.c.status.in_((QUEUED, RUNNING)))


def _admission_statement() -> Any:
    row = SUBMISSIONS.c
    recent = select(func.count()).where(
        row.client == bindparam("p_client"), row.received_at >= bindparam("p_since")
    )
    active = _active_count()
    queued = select(func.count()).where(row.status == _QUEUED_SQL)
    running = exists().where(row.client == bindparam("p_client"), row.status == _RUNNING_SQL)
    return select(
        recent.scalar_subquery(),
        recent.with_only_columns(func.min(row.received_at)).scalar_subquery(),
        active.scalar_subquery(),
        queued.scalar_subquery(),
        running,
    )


# Statuses as SQL literals where the planner must match them against the partial index
# ``uq_submissions_running_client`` (a bound parameter does not prove ``status = 'running'``).
_RUNNING_SQL: Any = literal_column(f"'{RUNNING}'")
_QUEUED_SQL: Any = literal_column(f"'{QUEUED}'")


def _claimable(table: Any) -> Any:
    """Queued, or running under a lease that expired (its worker died or hangs)."""
    return or_(table.c.status == _QUEUED_SQL, _expired(table))


def _client_idle(table: Any) -> Any:
    """No other submission of this row's client is running (lease expired or not: an expired
    one is re-queued by the sweep or re-claimed itself, in its client's turn)."""
    other = SUBMISSIONS.alias("other")
    busy = select(other.c.id).where(
        other.c.client == table.c.client,
        other.c.status == _RUNNING_SQL,
        other.c.id != table.c.id,
    )
    return ~busy.exists()


def _fair_next(*, lock: bool) -> Any:
    """The submission a free worker should take, as a scalar subquery: among those whose client
    has nothing else running, a dead worker's (lease expired), else the new submission of the
    lowest round (``turn``, see ``add``; oldest first within a round), else the oldest regrade.
    A client's runs never overlap (its receiver cannot run beside its sender), backlogged
    clients take turns, so one client's flood delays another by about one of its gradings, and
    an instructor's bulk regrade only uses workers that students leave idle.

    One ordered index scan per kind, stopping at the first row that qualifies, instead of
    sorting every queued row: a claim costs about the same with 10 or 1000 queued.

    ``lock``: PostgreSQL locks the chosen row, waiting for a transaction that holds it. Not
    SKIP LOCKED: a job is a worker's turn, not an order for one row, so a row passed over
    because the API was just noting that its job was sent would wait for the sweep. A claimer
    that waited for another's choice re-checks it and scans on; should it then pick a second
    row of the same client, the unique index refuses it and ``claim_next`` tries again."""

    def first(*conditions: Any, by_turn: bool = False) -> Any:
        cand = SUBMISSIONS.alias("cand")
        order = (cand.c.turn,) if by_turn else ()
        chosen = (
            select(cand.c.id)
            .where(*(condition(cand) for condition in conditions), _client_idle(cand))
            .order_by(*order, cand.c.created_at, cand.c.id)
            .limit(1)
        )
        if lock:
            chosen = chosen.with_for_update(of=cand)
        return chosen.scalar_subquery()

    return func.coalesce(
        first(_expired),
        first(lambda t: t.c.status == _QUEUED_SQL, lambda t: t.c.run == 1, by_turn=True),
        first(lambda t: t.c.status == _QUEUED_SQL, lambda t: t.c.run > 1),
    )


def _turn_statement() -> Any:
    """A new submission's round (see ``SubmissionRepository.add``)."""
    row = SUBMISSIONS.c
    graded_now = select(func.max(row.turn)).where(row.status == _RUNNING_SQL)
    next_up = select(func.min(row.turn)).where(row.status == _QUEUED_SQL)
    current = func.coalesce(graded_now.scalar_subquery(), next_up.scalar_subquery(), 0)
    own = select(func.max(row.turn) + 1).where(
        row.client == bindparam("p_client"), row.status.in_((QUEUED, RUNNING))
    )
    following = func.coalesce(own.scalar_subquery(), 0)
    return select(case((following > current, following), else_=current))


def _expired(table: Any) -> Any:
    return and_(table.c.status == _RUNNING_SQL, table.c.lease_expires_at < bindparam("p_now"))


def _claim_next_statement(dialect: str) -> Any:
    return _claim_statement(SUBMISSIONS.c.id == _fair_next(lock=dialect == "postgresql"))


def _claim_statement(which: Any) -> Any:
    row = SUBMISSIONS.c
    return (
        update(SUBMISSIONS)
        .where(which, _claimable(SUBMISSIONS), _client_idle(SUBMISSIONS))
        .values(
            status=RUNNING,
            lease_token=bindparam("p_token"),
            lease_expires_at=bindparam("p_expires"),
            worker=bindparam("p_worker"),
            attempts=row.attempts + 1,
            started_at=bindparam("p_now"),
        )
        # The whole row in the same statement: no second round trip to load it.
        .returning(*SUBMISSIONS.columns)
    )


def _leased_statement(columns: tuple[str, ...]) -> Any:
    row = SUBMISSIONS.c
    return (
        update(SUBMISSIONS)
        .where(
            row.id == bindparam("p_id"),
            row.status == RUNNING,
            row.lease_token == bindparam("p_token"),
        )
        .values({column: bindparam(f"v_{column}") for column in columns})
    )
