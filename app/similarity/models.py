"""The ``similarity_reports`` table: one row per assignment problem, which is both the job
(``status``, the lease a runner holds in ``claimed_until``) and its result (``result``, the
ranked pairs as JSON). A runner that dies leaves its lease to expire; another takes the job
again, so a report survives a restart."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class SimilarityReport(Base):
    __tablename__ = "similarity_reports"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    problem_id: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|done|failed
    requested_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    students: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(String(1000), default=None)
    result: Mapped[str | None] = mapped_column(Text, default=None)  # [PairOut] JSON

    __table_args__ = (
        UniqueConstraint("assignment_id", "problem_id", name="uq_similarity_reports_problem"),
        Index("ix_similarity_reports_status", "status", "claimed_until"),
    )
