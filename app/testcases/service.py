"""Adding, listing and removing stored cases; shared by the API and the CLI.

Validation (``validation.validate_case``) runs first and outside any transaction: the reference is
our trusted code and runs here, never in a sandbox. The insert or removal and the version bump
are then one transaction.

Every operation acts on one scope, ``course_id``: None for the catalog (the administrators'
cases, graded on every submission of the problem), else one course's own cases (graded only on
its assignments' submissions, managed by its staff).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.db.base import utcnow
from app.problems.cases import Inputs, Result, TestCase, Visibility
from app.problems.hooks import check_hidden_raises
from app.problems.loader import Problem
from app.testcases.codec import expected_from_bytes, expected_to_bytes, from_npz, to_npz
from app.testcases.models import StoredCase
from app.testcases.repository import CaseRepository
from app.testcases.validation import CheckedCase, validate_case


class CaseConflict(Exception):
    """The case clashes with existing state (409); ``field`` names what clashes."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class CaseMeta:
    name: str
    visibility: Visibility
    weight: float
    # The exception type the function must raise on these inputs, if any.
    raises: str | None = None


def reserved_names(problem: Problem) -> set[str]:
    """Built-in case and probe names: the sandbox run needs every name to be unique."""
    names = {c.name for c in problem.examples + problem.hidden}
    if problem.diagnostics is not None:
        names |= {p.name for p in problem.diagnostics.probes}
    return names


class CaseService:
    def __init__(self, settings: Settings, sessions: sessionmaker[Session]) -> None:
        self.settings = settings
        self.sessions = sessions

    def validate(
        self, problem: Problem, inputs: Inputs, expected: Result | None, raises: str | None = None
    ) -> CheckedCase:
        return validate_case(problem, inputs, expected, self.settings.case_max_elements, raises)

    def add(
        self,
        problem: Problem,
        meta: CaseMeta,
        inputs: Inputs,
        expected: Result | None = None,
        created_by: str | None = None,
        course_id: int | None = None,
    ) -> tuple[StoredCase, int]:
        """Validate and store a case in a scope; returns the row and the new test-set version."""
        if meta.name in reserved_names(problem):
            raise CaseConflict("name", f"{meta.name!r} is a built-in case or probe name")
        check_hidden_raises(meta.raises, meta.visibility)
        checked = self.validate(problem, inputs, expected, meta.raises)
        with self.sessions() as session:
            repo = CaseRepository(session)
            # The bump first: its lock orders concurrent changes of the problem, so the check
            # below sees every name committed before it, in any scope (no unique index spans
            # the catalog and the courses).
            version = repo.bump_version(problem.id)
            if repo.name_in_use(problem.id, meta.name, course_id):
                # Named without saying whose: another course's names are not this one's to see.
                raise CaseConflict("name", f"a case named {meta.name!r} already exists")
            row = StoredCase(
                problem_id=problem.id,
                course_id=course_id,
                name=meta.name,
                visibility=meta.visibility,
                weight=meta.weight,
                inputs_npz=to_npz(checked.inputs),
                expected_npy=expected_to_bytes(checked.expected, checked.raises),
                warnings=json.dumps([w.model_dump() for w in checked.warnings]),
                created_by=created_by,
                created_at=utcnow(),
                added_in_version=version,
            )
            try:
                repo.add(row)
                session.commit()
            except IntegrityError:  # a concurrent add of the same name won
                session.rollback()
                raise CaseConflict("name", f"a case named {meta.name!r} already exists") from None
        return row, version

    def remove(self, problem: Problem, case_id: int, course_id: int | None = None) -> int | None:
        """Remove a live case of the scope; the new version, or None if it has no such case."""
        with self.sessions() as session:
            repo = CaseRepository(session)
            if repo.get_live(problem.id, case_id, course_id) is None:
                return None
            version = repo.bump_version(problem.id)
            if not repo.remove(case_id, version):
                session.rollback()
                return None
            session.commit()
            return version

    def find(self, problem: Problem, key: str, course_id: int | None = None) -> StoredCase | None:
        """A live case of the scope by id or by name (the CLI accepts either)."""
        with self.sessions() as session:
            repo = CaseRepository(session)
            if key.isdigit():
                found = repo.get_live(problem.id, int(key), course_id)
                if found is not None:
                    return found
            return repo.live_by_name(problem.id, key, course_id)

    def get(
        self, problem: Problem, case_id: int, course_id: int | None = None
    ) -> StoredCase | None:
        with self.sessions() as session:
            return CaseRepository(session).get_live(problem.id, case_id, course_id)

    def live(
        self, problem: Problem, course_id: int | None = None
    ) -> tuple[int, Sequence[StoredCase]]:
        """(current version, the scope's own live cases)."""
        with self.sessions() as session:
            repo = CaseRepository(session)
            rows = repo.live(problem.id, course_id)
            # Read after the rows: a change committed in between shows as a newer version,
            # never as an older one.
            return repo.version(problem.id), rows

    def version(self, problem: Problem) -> int:
        with self.sessions() as session:
            return CaseRepository(session).version(problem.id)


def to_test_case(row: StoredCase) -> TestCase:
    visibility: Visibility = "public" if row.visibility == "public" else "hidden"
    expected, raises = expected_from_bytes(row.expected_npy)
    return TestCase(
        name=row.name,
        inputs=from_npz(row.inputs_npz),
        visibility=visibility,
        weight=row.weight,
        expected=expected,
        raises=raises,
    )
