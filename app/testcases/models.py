"""Tables of instructor test cases and of each problem's test-set version.

A case is never deleted: removing it records ``removed_in_version``, so the exact set a
submission was graded on (``Submission.test_set_version``) can always be rebuilt. Version 1 is
the problem folder's built-in set; every change to the stored cases bumps the version by one,
in the same transaction as the change.

A case belongs to the catalog (``course_id`` NULL: the administrators', graded on every
submission of the problem) or to one course (its staff's, graded only on submissions in that
course's assignments). The version counts changes of every scope of a problem, so a version and
a course name exactly one set: the catalog's cases live at that version plus the course's.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


_CATALOG_LIVE = text("removed_in_version IS NULL AND course_id IS NULL")
_COURSE_LIVE = text("removed_in_version IS NULL AND course_id IS NOT NULL")


class StoredCase(Base):
    __tablename__ = "test_cases"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    problem_id: Mapped[str] = mapped_column(String(128))
    # NULL: a catalog case; else the course that owns it (and whose submissions it grades).
    course_id: Mapped[int | None] = mapped_column(
        ForeignKey("courses.id", ondelete="CASCADE"), default=None
    )
    name: Mapped[str] = mapped_column(String(64))
    visibility: Mapped[str] = mapped_column(String(8))  # hidden | public
    weight: Mapped[float] = mapped_column(Float)
    # .npz (np.savez, no pickled objects) of the inputs; .npy of the reference's output.
    inputs_npz: Mapped[bytes] = mapped_column(LargeBinary)
    expected_npy: Mapped[bytes] = mapped_column(LargeBinary)
    warnings: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of {code, message}
    created_by: Mapped[str | None] = mapped_column(String(100), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    added_in_version: Mapped[int] = mapped_column(Integer)
    removed_in_version: Mapped[int | None] = mapped_column(Integer, default=None)
    removed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    __table_args__ = (
        Index("ix_test_cases_problem_id", "problem_id"),
        Index("ix_test_cases_course_id", "course_id"),
        # A name is unique among a scope's live cases; a removed name may be reused. Across
        # scopes (a catalog case and a course's) the service keeps names apart, under the
        # version bump's lock: a run needs every name of its set to be unique.
        Index(
            "uq_test_cases_live_name",
            "problem_id",
            "name",
            unique=True,
            sqlite_where=_CATALOG_LIVE,
            postgresql_where=_CATALOG_LIVE,
        ),
        Index(
            "uq_test_cases_course_live_name",
            "problem_id",
            "course_id",
            "name",
            unique=True,
            sqlite_where=_COURSE_LIVE,
            postgresql_where=_COURSE_LIVE,
        ),
    )


class ProblemTestSet(Base):
    __tablename__ = "problem_test_sets"

    problem_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
