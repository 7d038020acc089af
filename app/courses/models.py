"""The ``courses`` and ``course_members`` tables."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")

COURSE_ROLES = ("student", "ta", "instructor")
MEMBER_STATUSES = ("active", "blocked", "removed")
DEFAULT_POINTS = 10.0


class Course(Base):
    __tablename__ = "courses"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    title: Mapped[str] = mapped_column(String(200))
    # Students join with it (or a link holding it); NULL: joining by code is closed.
    join_code: Mapped[str | None] = mapped_column(String(32), unique=True, default=None)
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # What a problem is worth when added without points (a deep-linked problem, an API entry
    # with none): the web form's default.
    default_points: Mapped[float] = mapped_column(Float, default=DEFAULT_POINTS)


class Membership(Base):
    """A person's place in a course. A removed or blocked member keeps the row (their history
    stays in the gradebook) but can no longer act in the course."""

    __tablename__ = "course_members"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))  # student | ta | instructor
    section: Mapped[str | None] = mapped_column(String(64), default=None)
    status: Mapped[str] = mapped_column(String(16), default="active")  # active|blocked|removed
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        UniqueConstraint("course_id", "user_id", name="uq_course_members_course_user"),
        Index("ix_course_members_course_role", "course_id", "role"),
    )
