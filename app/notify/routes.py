"""The mail outbox for staff (every mail for administrators, a course's own for its staff) and
a course's invitations."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Admin
from app.core.deps import SessionsDep, SettingsDep, site_url
from app.core.errors import error_responses
from app.courses.deps import CourseAccess, CourseInstructor, CourseStaff
from app.mail.status import MailOutboxOut, MailStatus, outbox_view
from app.notify.invitations import invite

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


class SkippedOut(BaseModel):
    user_id: int
    reason: str


class InvitationsOut(BaseModel):
    invited: list[int]
    skipped: list[SkippedOut]


def _invite(
    sessions: sessionmaker[Session],
    access: CourseAccess,
    base: str,
    user_ids: list[int] | None,
) -> InvitationsOut:
    with sessions() as session:
        done = invite(session, access, base, user_ids)
    return InvitationsOut(
        invited=done.invited,
        skipped=[SkippedOut(user_id=uid, reason=why) for uid, why in done.skipped],
    )


@router.post(
    "/api/courses/{course_id}/invitations",
    response_model=InvitationsOut,
    responses=error_responses({}),
)
async def invite_everyone(
    request: Request, access: CourseInstructor, sessions: SessionsDep, settings: SettingsDep
) -> InvitationsOut:
    """Mails an invitation to every active member who has not joined yet (not signed in,
    no password): a link to choose a password when the account is this course's to set up,
    else a pointer to sign in. Nobody is mailed twice within 10 minutes. Instructors."""
    base = site_url(request, settings)
    return await run_in_threadpool(_invite, sessions, access, base, None)


@router.post(
    "/api/courses/{course_id}/members/{user_id}/invitation",
    response_model=InvitationsOut,
    responses=error_responses({404: "No such member"}),
)
async def invite_one(
    request: Request,
    user_id: Annotated[int, Path(ge=1, le=2**53)],
    access: CourseInstructor,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> InvitationsOut:
    """Mails (again) this member's invitation; one who has joined gets the sign-in pointer,
    never a password link. Instructors."""
    base = site_url(request, settings)
    return await run_in_threadpool(_invite, sessions, access, base, [user_id])
