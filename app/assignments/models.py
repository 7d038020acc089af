"""The ``assignments``, ``assignment_problems`` and ``assignment_overrides`` tables.

Lists (later deadlines, per-attempt penalties) are JSON text: they are read and written whole,
with the assignment, and validated by the pydantic schemas at the API.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class Assignment(Base):
    __tablename__ = "assignments"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    # Dates: hidden from students before release_at; full credit until due_at; then each later
    # deadline ({"until": iso, "credit": 0..1}) in order; after the last, after_close says.
    release_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    due_at: Mapped[datetime] = mapped_column(UTCDateTime())
    late_deadlines: Mapped[str] = mapped_column(Text, default="[]")
    after_close: Mapped[str] = mapped_column(String(16), default="closed")  # closed | practice
    scoring: Mapped[str] = mapped_column(String(8), default="best")  # best | last
    # visible | summary | after_due_date | hidden (hidden: verdicts only until published)
    feedback: Mapped[str] = mapped_column(String(16), default="visible")
    feedback_published_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    hide_scores: Mapped[bool] = mapped_column(Boolean, default=False)
    scores_published_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # Attempts: graded submissions per problem (examples runs never count); NULL: no maximum.
    max_attempts: Mapped[int | None] = mapped_column(Integer, default=None)
    # Fractions taken off attempt 1, 2, 3...; the last one repeats ([0, 0.05, 0.1]).
    attempt_penalties: Mapped[str] = mapped_column(Text, default="[]")
    # Per student and problem: at most rate_limit graded submissions per rate_window_seconds.
    rate_limit: Mapped[int | None] = mapped_column(Integer, default=None)
    rate_window_seconds: Mapped[int] = mapped_column(Integer, default=3600)
    # Hidden cases generated from a seed of (student, assignment, problem) instead of the
    # folder's own; instructors' stored cases apply to everyone.
    per_student_cases: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        CheckConstraint("after_close IN ('closed', 'practice')", name="after_close"),
        CheckConstraint("scoring IN ('best', 'last')", name="scoring"),
        CheckConstraint(
            "feedback IN ('visible', 'summary', 'after_due_date', 'hidden')", name="feedback"
        ),
    )


class AssignmentProblem(Base):
    __tablename__ = "assignment_problems"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    assignment_id: Mapped[int] = mapped_column(
        ForeignKey("assignments.id", ondelete="CASCADE"), index=True
    )
    problem_id: Mapped[str] = mapped_column(String(128))
    points: Mapped[float] = mapped_column(Float, default=1.0)
    position: Mapped[int] = mapped_column(Integer, default=0)
    # This problem's own feedback policy; NULL: the assignment's.
    feedback: Mapped[str | None] = mapped_column(String(16), default=None)

    __table_args__ = (
        UniqueConstraint("assignment_id", "problem_id", name="uq_assignment_problems_problem"),
    )


class Override(Base):
    """An exception for one student or one section: until ``until``, submissions earn at least
    ``credit`` (an extension is credit 1.0 until a later date), and ``extra_attempts`` more
    graded attempts. Exactly one of ``user_id`` and ``section`` is set."""

    __tablename__ = "assignment_overrides"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    assignment_id: Mapped[int] = mapped_column(
        ForeignKey("assignments.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), default=None
    )
    section: Mapped[str | None] = mapped_column(String(64), default=None)
    until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    credit: Mapped[float] = mapped_column(Float, default=1.0)
    extra_attempts: Mapped[int] = mapped_column(Integer, default=0)
    note: Mapped[str] = mapped_column(String(500), default="")
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (CheckConstraint("(user_id IS NULL) <> (section IS NULL)", name="one_target"),)


def late_of(assignment: Assignment) -> list[tuple[datetime, float]]:
    """The stored later deadlines as (until, credit), in their order."""
    items = json.loads(assignment.late_deadlines or "[]")
    return [(_aware(datetime.fromisoformat(i["until"])), float(i["credit"])) for i in items]


def penalties_of(assignment: Assignment) -> list[float]:
    """The stored per-attempt penalties (fractions)."""
    return [float(p) for p in json.loads(assignment.attempt_penalties or "[]")]


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
