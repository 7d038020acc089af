"""The job side of ``similarity_reports``: ask for a report, claim one to compute (a lease,
so a runner that dies gives it back), store its result."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.similarity.models import SimilarityReport

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
# A job taken this many times without finishing is failed, not retried forever.
MAX_ATTEMPTS = 3


def find(session: Session, assignment_id: int, problem_id: str) -> SimilarityReport | None:
    return session.scalar(
        select(SimilarityReport).where(
            SimilarityReport.assignment_id == assignment_id,
            SimilarityReport.problem_id == problem_id,
        )
    )


def request(
    session: Session, assignment_id: int, problem_id: str, user_id: int
) -> SimilarityReport:
    """Queue the report (again); one already queued or running stays as it is. The caller
    commits."""
    row = find(session, assignment_id, problem_id)
    if row is None:
        row = SimilarityReport(
            assignment_id=assignment_id, problem_id=problem_id, attempts=0, students=0
        )
        session.add(row)
    elif row.status in (QUEUED, RUNNING):
        return row
    row.status = QUEUED
    row.requested_by = user_id
    row.requested_at = utcnow()
    row.claimed_until = None
    row.attempts = 0
    row.error = None
    return row


def claim(session: Session, now: datetime, lease: timedelta) -> SimilarityReport | None:
    """The oldest queued job, or a running one whose runner's lease ran out; committed as
    ours until ``now + lease``."""
    due = or_(
        SimilarityReport.status == QUEUED,
        and_(SimilarityReport.status == RUNNING, SimilarityReport.claimed_until < now),
    )
    for row_id in session.scalars(
        select(SimilarityReport.id).where(due).order_by(SimilarityReport.requested_at).limit(5)
    ).all():
        taken = session.execute(
            update(SimilarityReport)
            .where(SimilarityReport.id == row_id, due)
            .values(
                status=RUNNING,
                claimed_until=now + lease,
                attempts=SimilarityReport.attempts + 1,
            )
            .execution_options(synchronize_session=False)
        )
        session.commit()
        if taken.rowcount:  # type: ignore[attr-defined]
            row = session.get(SimilarityReport, row_id)
            assert row is not None
            session.refresh(row)
            if row.attempts > MAX_ATTEMPTS:
                finish(session, row, error="the report did not finish in three tries")
                continue
            return row
    return None


def finish(
    session: Session,
    row: SimilarityReport,
    *,
    result: str | None = None,
    students: int = 0,
    error: str | None = None,
) -> None:
    row.status = FAILED if error is not None else DONE
    row.result = result
    row.students = students
    row.error = error
    row.claimed_until = None
    row.finished_at = utcnow()
    session.commit()
