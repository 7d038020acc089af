"""Tables of instructor test cases and of each problem's test-set version.

A case is never deleted: removing it records ``removed_in_version``, so the exact set a
submission was graded on (``Submission.test_set_version``) can always be rebuilt. Version 1 is
the problem folder's built-in set; every change to the stored cases bumps the version by one,
in the same transaction as the change.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class StoredCase(Base):
    __tablename__ = "test_cases"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    problem_id: Mapped[str] = mapped_column(String(128))
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
        # A name is unique among a problem's live cases; a removed name may be reused.
        Index(
            "uq_test_cases_live_name",
            "problem_id",
            "name",
            unique=True,
            sqlite_where=removed_in_version.is_(None),
            postgresql_where=removed_in_version.is_(None),
        ),
    )


class ProblemTestSet(Base):
    __tablename__ = "problem_test_sets"

    problem_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
