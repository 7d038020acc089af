"""The ``grade_adjustments`` table: the audit log of manual scores. Append-only: the newest row
for a (assignment, student, problem) is the score in force; ``score`` NULL clears it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class GradeAdjustment(Base):
    __tablename__ = "grade_adjustments"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    problem_id: Mapped[str] = mapped_column(String(128))
    # Points, as the gradebook shows them; NULL: back to the computed score.
    old_score: Mapped[float | None] = mapped_column(Float, default=None)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    comment: Mapped[str] = mapped_column(String(1000))
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        Index("ix_grade_adjustments_target", "assignment_id", "user_id", "problem_id"),
    )


FEEDBACK_KINDS = ("comment", "note")


class FeedbackText(Base):
    """A comment the student reads (``kind`` "comment") or a note only the course's staff read
    ("note"), on one student's problem (``submission_id`` NULL) or on one of their submissions.
    Append-only like the adjustments: the newest row for a target and kind is the text in
    force, an empty ``body`` clears it, and the older rows are its history."""

    __tablename__ = "feedback_texts"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    problem_id: Mapped[str] = mapped_column(String(128))
    submission_id: Mapped[str | None] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), default=None
    )
    kind: Mapped[str] = mapped_column(String(8))
    body: Mapped[str] = mapped_column(Text)
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (Index("ix_feedback_texts_target", "assignment_id", "user_id", "problem_id"),)


class DiagnosisHint(Base):
    """A course's text for one diagnosis of one problem: every student of the course whose
    latest graded attempt on the problem has the diagnosis reads it, for as long as it does
    (worked out when read, so a later submission with the same diagnosis gets it and a fix
    drops it). An empty ``body`` withdraws it."""

    __tablename__ = "diagnosis_hints"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    problem_id: Mapped[str] = mapped_column(String(128))
    code: Mapped[str] = mapped_column(String(128))
    body: Mapped[str] = mapped_column(Text)
    updated_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        UniqueConstraint("course_id", "problem_id", "code", name="uq_diagnosis_hints_target"),
    )
