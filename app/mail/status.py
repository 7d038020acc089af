"""The outbox as staff see it: each mail's recipient, subject, state and last error, never its
body (it may carry a one-use link)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.mail.models import MailOut

MailStatus = Literal["pending", "sent", "failed"]


class MailItem(BaseModel):
    id: int
    kind: str
    to: str
    subject: str
    course_id: int | None
    status: str
    attempts: int
    next_attempt_at: datetime | None
    last_error: str | None
    created_at: datetime
    sent_at: datetime | None


class MailOutboxOut(BaseModel):
    counts: dict[str, int]
    items: list[MailItem]


def outbox_view(
    sessions: sessionmaker[Session], course_id: int | None, status: MailStatus | None, limit: int
) -> MailOutboxOut:
    """The newest ``limit`` mails (of one course when ``course_id`` is given) and the count
    of each status."""
    rows = select(MailOut)
    counts_q = select(MailOut.status, func.count()).group_by(MailOut.status)
    if course_id is not None:
        rows = rows.where(MailOut.course_id == course_id)
        counts_q = counts_q.where(MailOut.course_id == course_id)
    if status is not None:
        rows = rows.where(MailOut.status == status)
    with sessions() as session:
        counts = {str(k): int(v) for k, v in session.execute(counts_q)}
        items = [
            MailItem(
                id=row.id,
                kind=row.kind,
                to=row.to_address,
                subject=row.subject,
                course_id=row.course_id,
                status=row.status,
                attempts=row.attempts,
                next_attempt_at=row.next_attempt_at if row.status == "pending" else None,
                last_error=row.last_error,
                created_at=row.created_at,
                sent_at=row.sent_at,
            )
            for row in session.scalars(rows.order_by(MailOut.id.desc()).limit(limit))
        ]
    return MailOutboxOut(counts=counts, items=items)
