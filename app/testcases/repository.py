"""Every SQL statement on test cases and test-set versions (the caller commits)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from sqlalchemy import ColumnElement, Table, bindparam, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.testcases.models import ProblemTestSet, StoredCase

# The problem folder's own cases are version 1; instructors' stored case sets start above it.
BUILTIN_TEST_SET_VERSION = 1

_TEST_SETS = cast(Table, ProblemTestSet.__table__)
_VERSION = select(_TEST_SETS.c.version).where(_TEST_SETS.c.problem_id == bindparam("p_problem"))


class CaseRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # -- versions ------------------------------------------------------------------------------

    def version(self, problem_id: str) -> int:
        # Read for every graded submission: a Core statement built once (see _VERSION).
        found = self.session.connection().execute(_VERSION, {"p_problem": problem_id}).scalar()
        return BUILTIN_TEST_SET_VERSION if found is None else int(found)

    def bump_version(self, problem_id: str) -> int:
        """The next version, taken in this transaction: the UPDATE's row lock (PostgreSQL) or
        the write lock (SQLite) orders concurrent changes, so no two get the same number."""
        dialect = self.session.get_bind().dialect.name
        insert = pg_insert if dialect == "postgresql" else sqlite_insert
        self.session.execute(
            insert(ProblemTestSet)
            .values(problem_id=problem_id, version=BUILTIN_TEST_SET_VERSION, updated_at=utcnow())
            .on_conflict_do_nothing(index_elements=["problem_id"])
        )
        stmt = (
            update(ProblemTestSet)
            .where(ProblemTestSet.problem_id == problem_id)
            .values(version=ProblemTestSet.version + 1, updated_at=utcnow())
            .returning(ProblemTestSet.version)
            .execution_options(synchronize_session=False)
        )
        return int(self.session.execute(stmt).scalar_one())

    # -- cases ---------------------------------------------------------------------------------
    # ``course_id`` is a scope: None for the catalog, else the course that owns the cases.

    def live(self, problem_id: str, course_id: int | None = None) -> Sequence[StoredCase]:
        """The live cases of exactly one scope."""
        stmt = (
            select(StoredCase)
            .where(
                StoredCase.problem_id == problem_id,
                _scope(course_id),
                StoredCase.removed_in_version.is_(None),
            )
            .order_by(StoredCase.id)
        )
        return self.session.scalars(stmt).all()

    def at_version(
        self, problem_id: str, version: int, course_id: int | None = None
    ) -> Sequence[StoredCase]:
        """The stored cases of ``version`` exactly, removed ones included if removed later: the
        catalog's, plus the course's when ``course_id`` is given (what its submissions run)."""
        scopes = _scope(None) if course_id is None else or_(_scope(None), _scope(course_id))
        stmt = (
            select(StoredCase)
            .where(
                StoredCase.problem_id == problem_id,
                scopes,
                StoredCase.added_in_version <= version,
                or_(
                    StoredCase.removed_in_version.is_(None),
                    StoredCase.removed_in_version > version,
                ),
            )
            .order_by(StoredCase.id)
        )
        return self.session.scalars(stmt).all()

    def get_live(
        self, problem_id: str, case_id: int, course_id: int | None = None
    ) -> StoredCase | None:
        stmt = select(StoredCase).where(
            StoredCase.id == case_id,
            StoredCase.problem_id == problem_id,
            _scope(course_id),
            StoredCase.removed_in_version.is_(None),
        )
        return self.session.scalars(stmt).first()

    def live_by_name(
        self, problem_id: str, name: str, course_id: int | None = None
    ) -> StoredCase | None:
        stmt = select(StoredCase).where(
            StoredCase.problem_id == problem_id,
            StoredCase.name == name,
            _scope(course_id),
            StoredCase.removed_in_version.is_(None),
        )
        return self.session.scalars(stmt).first()

    def name_in_use(self, problem_id: str, name: str, course_id: int | None) -> bool:
        """Whether a live case that would run alongside this scope's already has ``name``: for
        a course, the catalog's and its own; for the catalog, every course's too (each runs
        with the catalog's)."""
        stmt = select(StoredCase.id).where(
            StoredCase.problem_id == problem_id,
            StoredCase.name == name,
            StoredCase.removed_in_version.is_(None),
        )
        if course_id is not None:
            stmt = stmt.where(or_(_scope(None), _scope(course_id)))
        return self.session.scalars(stmt.limit(1)).first() is not None

    def add(self, case: StoredCase) -> None:
        self.session.add(case)
        self.session.flush()

    def remove(self, case_id: int, version: int) -> bool:
        stmt = (
            update(StoredCase)
            .where(StoredCase.id == case_id, StoredCase.removed_in_version.is_(None))
            .values(removed_in_version=version, removed_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return bool(self.session.execute(stmt).rowcount)  # type: ignore[attr-defined]


def _scope(course_id: int | None) -> ColumnElement[bool]:
    if course_id is None:
        return StoredCase.course_id.is_(None)
    return StoredCase.course_id == course_id
