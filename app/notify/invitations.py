"""Inviting a course's people by mail: each gets a link to choose a password when their account
is the course's to set up (``tenancy.credentials_refusal``), else a pointer to the sign-in page;
the mail goes through the outbox in the same transaction as the link. People who have joined
(signed in, or could) are not invited again; nobody is invited twice within
``RESEND_AFTER``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.auth.accounts import issue_reset_link
from app.auth.models import User
from app.courses.deps import CourseAccess, course_not_found
from app.courses.models import Course, Membership
from app.courses.roster import LOOKUP_CHUNK
from app.courses.service import latest_invitations
from app.courses.tenancy import course_person, credentials_refusal, has_been_used
from app.db.base import utcnow
from app.mail.messages import INVITATION, invitation_message
from app.mail.outbox import enqueue

RESEND_AFTER = timedelta(minutes=10)


@dataclass
class Invited:
    invited: list[int] = field(default_factory=list)
    # (user id, why not): joined already, no email, disabled, invited a moment ago.
    skipped: list[tuple[int, str]] = field(default_factory=list)


def _why_not(
    session: Session, member: Membership, user: User, recent: set[int], force: bool
) -> str | None:
    if member.status != "active":
        return "not an active member"
    if user.disabled_at is not None:
        return "account disabled"
    if user.email is None:
        return "no email"
    if has_been_used(session, user) and not force:
        return "joined already"
    if user.id in recent:
        return f"invited less than {int(RESEND_AFTER.total_seconds() // 60)} minutes ago"
    return None


def _invite_one(
    session: Session, access: CourseAccess, course: Course, user: User, base: str
) -> None:
    assert user.email is not None
    url = None
    if not has_been_used(session, user) and credentials_refusal(session, access, user) is None:
        url = f"{base}/reset/{issue_reset_link(session, user.id, access.principal.user_id)}"
    message = invitation_message(user.name, course.title, url, f"{base}/login")
    enqueue(session, INVITATION, user.email, message, user_id=user.id, course_id=course.id)


def _invite_all(
    session: Session,
    access: CourseAccess,
    course: Course,
    base: str,
    pairs: list[tuple[Membership, User]],
    force: bool,
) -> Invited:
    since = utcnow() - RESEND_AFTER
    recent = {
        uid
        for uid, (_, at) in latest_invitations(session, course.id, [u.id for _, u in pairs]).items()
        if at > since
    }
    out = Invited()
    for member, user in pairs:
        why = _why_not(session, member, user, recent, force=force)
        if why is not None:
            out.skipped.append((user.id, why))
            continue
        _invite_one(session, access, course, user, base)
        out.invited.append(user.id)
    return out


def _course(session: Session, access: CourseAccess) -> Course:
    course = session.get(Course, access.course_id)
    if course is None:
        raise course_not_found(access.course_id)
    return course


def invite(
    session: Session, access: CourseAccess, base: str, user_ids: list[int] | None
) -> Invited:
    """Invites ``user_ids`` (a resend when already invited), or every active member who has
    not joined; commits."""
    course = _course(session, access)
    pairs: list[tuple[Membership, User]]
    if user_ids is None:
        pairs = [
            (member, user)
            for member, user in session.execute(
                select(Membership, User)
                .join(User, User.id == Membership.user_id)
                .where(Membership.course_id == course.id, Membership.status == "active")
                .order_by(User.id)
            )
        ]
    else:
        pairs = [course_person(session, course.id, uid) for uid in user_ids]
    out = _invite_all(session, access, course, base, pairs, force=user_ids is not None)
    session.commit()
    return out


def invite_enrolled(session: Session, access: CourseAccess, base: str, user_ids: list[int]) -> int:
    """The roster import's hook (``app.courses.roster.RosterInvite``): invites the people it
    has just enrolled, in its transaction (the caller commits). Someone whose account was in
    use already gets the pointer to sign in. The number invited."""
    course = _course(session, access)
    pairs: list[tuple[Membership, User]] = []
    for start in range(0, len(user_ids), LOOKUP_CHUNK):
        pairs.extend(
            (member, user)
            for member, user in session.execute(
                select(Membership, User)
                .join(User, User.id == Membership.user_id)
                .where(
                    Membership.course_id == course.id,
                    Membership.user_id.in_(user_ids[start : start + LOOKUP_CHUNK]),
                )
                .order_by(User.id)
            )
        )
    return len(_invite_all(session, access, course, base, pairs, force=True).invited)
