"""A course's texts per diagnosis ("feedback by misconception"). Who reads one is worked out
when read, from each student's latest graded attempt: one write reaches every student who has
the diagnosis now, later submissions with it get it too, and a fix drops it. Nothing is
written per student, so a hint for thousands of students is one row, not a job."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.gradebook.markdown import render
from app.gradebook.models import DiagnosisHint
from app.gradebook.schemas import HintOut


def hint_out(row: DiagnosisHint, names: dict[int, str], reaches: int | None = None) -> HintOut:
    return HintOut(
        problem_id=row.problem_id,
        code=row.code,
        body=row.body,
        html=render(row.body),
        updated_by_name=names.get(row.updated_by) if row.updated_by else None,
        updated_at=row.updated_at,
        reaches=reaches,
    )


def course_hints(
    session: Session, course_id: int, problem_ids: Iterable[str]
) -> dict[tuple[str, str], DiagnosisHint]:
    """The course's live hints on these problems, by (problem, code)."""
    wanted = list(set(problem_ids))
    if not wanted:
        return {}
    rows = session.scalars(
        select(DiagnosisHint).where(
            DiagnosisHint.course_id == course_id, DiagnosisHint.problem_id.in_(wanted)
        )
    )
    return {(r.problem_id, r.code): r for r in rows if r.body.strip()}


def put_hint(
    session: Session,
    course_id: int,
    problem_id: str,
    code: str,
    body: str,
    by: int | None,
    now: datetime,
) -> DiagnosisHint:
    """Create, replace or (empty ``body``) withdraw the course's hint. Two first writes at
    once: the unique constraint refuses one insert, which then updates the row that won."""
    try:
        return _put(session, course_id, problem_id, code, body, by, now)
    except IntegrityError:
        session.rollback()
        return _put(session, course_id, problem_id, code, body, by, now)


def _put(
    session: Session,
    course_id: int,
    problem_id: str,
    code: str,
    body: str,
    by: int | None,
    now: datetime,
) -> DiagnosisHint:
    row = session.scalars(
        select(DiagnosisHint).where(
            DiagnosisHint.course_id == course_id,
            DiagnosisHint.problem_id == problem_id,
            DiagnosisHint.code == code,
        )
    ).one_or_none()
    if row is None:
        row = DiagnosisHint(course_id=course_id, problem_id=problem_id, code=code)
        session.add(row)
    row.body = body
    row.updated_by = by
    row.updated_at = now
    session.commit()
    return row
