"""The ``grade_adjustments`` table: the audit log of manual scores. Append-only: the newest row
for a (assignment, student, problem) is the score in force; ``score`` NULL clears it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String
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
