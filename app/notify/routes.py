"""The mail outbox for staff: every mail for administrators, a course's own for its staff."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Admin
from app.core.deps import SessionsDep
from app.core.errors import error_responses
from app.courses.deps import CourseStaff
from app.mail.status import MailOutboxOut, MailStatus, outbox_view

router = APIRouter(tags=["mail"])
Limit = Annotated[int, Query(ge=1, le=1000)]


@router.get("/api/admin/mail", response_model=MailOutboxOut, responses=error_responses({}))
async def all_mail(
    admin: Admin, sessions: SessionsDep, status: MailStatus | None = None, limit: Limit = 100
) -> MailOutboxOut:
    """Every mail, newest first: pending (with its next try), sent, or failed (with the
    server's answer). Bodies are never shown. Administrators only."""
    return await run_in_threadpool(outbox_view, sessions, None, status, limit)


@router.get(
    "/api/courses/{course_id}/mail", response_model=MailOutboxOut, responses=error_responses({})
)
async def course_mail(
    access: CourseStaff, sessions: SessionsDep, status: MailStatus | None = None, limit: Limit = 100
) -> MailOutboxOut:
    """The mails this course sent (invitations, notifications), newest first. The course's
    staff."""
    return await run_in_threadpool(outbox_view, sessions, access.course_id, status, limit)
