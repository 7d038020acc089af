"""Tables of the submissions feature.

``submissions`` holds the current state of each submission and its latest result. A worker owns
a running row through ``lease_token``; results are only written by the holder of the current
token, so a job that is redelivered, or a worker that lost its lease, can never write twice.
``gradings`` keeps one row per finished grading run (unique per ``(submission_id, run)``):
``run`` is bumped by a regrade, and the database itself refuses a second result for a run.
At most one row per ``client`` is ``running`` (a partial unique index): one client's runs never
overlap. ``submission_events`` is the append-only log that the SSE endpoint streams, across
processes.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

# SQLite only auto-increments an INTEGER PRIMARY KEY.
AutoId = BigInteger().with_variant(Integer(), "sqlite")


class Submission(Base):
    __tablename__ = "submissions"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    problem_id: Mapped[str] = mapped_column(String(128), index=True)
    mode: Mapped[str] = mapped_column(String(16), default="submit")  # submit | examples
    code: Mapped[str] = mapped_column(Text)
    code_sha256: Mapped[str] = mapped_column(String(64))
    # Who submitted: "user:<id>" for a signed-in account, else "ip:<address>" (see ``client_of``).
    client: Mapped[str] = mapped_column(String(200))
    # The signed-in account that submitted; NULL: anonymous practice.
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None, index=True
    )
    # Submitted as part of an assignment (its dates, attempts and feedback policy apply).
    assignment_id: Mapped[int | None] = mapped_column(
        ForeignKey("assignments.id", ondelete="SET NULL"), default=None
    )
    # The graded attempt's number (1, 2...) for its (assignment, user, problem); NULL outside
    # an assignment and for examples runs, which never cost one. (``attempts`` below counts a
    # worker's tries at grading the row.)
    graded_attempt: Mapped[int | None] = mapped_column(Integer, default=None)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), default=None)
    request_sha256: Mapped[str] = mapped_column(String(64))

    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|done
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    run: Mapped[int] = mapped_column(Integer, default=1)
    lease_token: Mapped[str | None] = mapped_column(String(36), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    worker: Mapped[str | None] = mapped_column(String(200), default=None)
    # Its client's round in the fair queue (see SubmissionRepository.add): a free worker takes
    # the lowest round first, so backlogged clients take turns.
    turn: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    # Last time a job for this row was handed to the broker (celery mode); NULL: not yet.
    enqueued_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    test_set_version: Mapped[int | None] = mapped_column(Integer, default=None)
    verdict: Mapped[str | None] = mapped_column(String(32), default=None)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    report: Mapped[str | None] = mapped_column(Text, default=None)  # GradeReport JSON

    # When the request arrived (its body's last byte: app.core.arrival), the time every rule
    # reads: dates and late credit, rate windows. ``created_at`` is when the row was inserted,
    # which a loaded server may reach seconds later. Nullable in the schema only because SQLite
    # cannot add a NOT NULL column in place (migration 0008 copies created_at into old rows).
    received_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    __table_args__ = (
        UniqueConstraint("client", "idempotency_key", name="uq_submissions_client_idem"),
        Index("ix_submissions_status_created", "status", "created_at"),
        Index("ix_submissions_status_turn", "status", "turn", "created_at"),
        Index("ix_submissions_client_received", "client", "received_at"),
        Index("ix_submissions_assignment_user", "assignment_id", "user_id", "problem_id"),
        # Two concurrent submissions cannot both take the last allowed attempt.
        Index(
            "uq_submissions_graded_attempt",
            "assignment_id",
            "user_id",
            "problem_id",
            "graded_attempt",
            unique=True,
            sqlite_where=text("graded_attempt IS NOT NULL"),
            postgresql_where=text("graded_attempt IS NOT NULL"),
        ),
        # The database itself refuses a second running submission of one client, whatever
        # races the claimers run (see SubmissionRepository.claim_next).
        Index(
            "uq_submissions_running_client",
            "client",
            unique=True,
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
    )


class Grading(Base):
    __tablename__ = "gradings"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    run: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)
    test_set_version: Mapped[int | None] = mapped_column(Integer, default=None)
    verdict: Mapped[str] = mapped_column(String(32))
    score: Mapped[float] = mapped_column(Float)
    report: Mapped[str] = mapped_column(Text)
    worker: Mapped[str | None] = mapped_column(String(200), default=None)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    finished_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (UniqueConstraint("submission_id", "run", name="uq_gradings_submission_run"),)


class SubmissionEvent(Base):
    __tablename__ = "submission_events"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    submission_id: Mapped[str] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    # The event's number within its submission (1, 2, 3...): the SSE id, so a stream reveals
    # nothing of other submissions' activity, as the table-wide ``id`` would.
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))  # status | phase | result
    data: Mapped[str] = mapped_column(Text)  # JSON object
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        UniqueConstraint("submission_id", "seq", name="uq_submission_events_submission_seq"),
    )
