"""LMS roster members waiting to be linked to their existing account.

On a platform not trusted for email, the LMS's word that a roster member has some email is not
proof that they own the account with it, so the account is never taken over. But when that
email is an existing member's of the linked course, a second, LMS-made account would list the
person twice in the gradebook. So the roster sync records them as pending instead; their
launch makes no membership and offers to link their LMS identity to the account they sign in
to (``app.lti.linking``), after which launches and syncs use that account."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.auth.accounts import AccountError, find_by_email
from app.courses.models import Membership
from app.lti.models import LtiContext, LtiPendingMember, LtiPlatform, LtiUser
from app.lti.provisioning import once
from app.lti.schemas import PendingMemberOut


def pending_of(session: Session, platform_id: int, subject: str) -> LtiPendingMember | None:
    """The person's pending row while their LMS identity is not linked to an account."""
    row = session.scalars(
        select(LtiPendingMember).where(
            LtiPendingMember.platform_id == platform_id, LtiPendingMember.subject == subject
        )
    ).first()
    if row is None:
        return None
    linked = session.scalar(
        select(LtiUser.linked_at).where(
            LtiUser.platform_id == platform_id, LtiUser.subject == subject
        )
    )
    return None if linked is not None else row


def hold_member(
    session: Session, platform: LtiPlatform, context: LtiContext, subject: str, email: object
) -> bool:
    """Whether the roster sync leaves this member to be linked (no account made, nobody
    enrolled): already pending, or, on an untrusted platform, a person the tool has never seen
    whose email is an existing member's of the course (not an administrator's or a
    deactivated account: those are never linked)."""
    if pending_of(session, platform.id, subject) is not None:
        return True
    if platform.trust_email or not isinstance(email, str) or "@" not in email:
        return False
    known = session.scalar(
        select(LtiUser.id).where(LtiUser.platform_id == platform.id, LtiUser.subject == subject)
    )
    if known is not None:
        return False
    try:
        user = find_by_email(session, email)
    except AccountError:
        return False
    if user is None or user.role == "admin" or user.disabled_at is not None:
        return False
    member = session.scalar(
        select(Membership.id).where(
            Membership.course_id == context.course_id, Membership.user_id == user.id
        )
    )
    if member is None:
        return False

    def find() -> LtiPendingMember | None:
        return session.scalars(
            select(LtiPendingMember).where(
                LtiPendingMember.platform_id == platform.id, LtiPendingMember.subject == subject
            )
        ).first()

    once(
        session,
        find,
        lambda: LtiPendingMember(
            platform_id=platform.id, subject=subject, context_id=context.id, user_id=user.id
        ),
    )
    return True


def forget(session: Session, platform_id: int, subject: str) -> None:
    """The person's LMS identity is linked now: nothing is pending."""
    session.execute(
        delete(LtiPendingMember).where(
            LtiPendingMember.platform_id == platform_id, LtiPendingMember.subject == subject
        )
    )


def pending_members(session: Session, course_id: int) -> list[PendingMemberOut]:
    """The course's members an LMS roster names who are still to be linked on first launch."""
    rows = session.execute(
        select(LtiPendingMember.user_id, LtiPendingMember.created_at, LtiPlatform.name)
        .join(LtiContext, LtiContext.id == LtiPendingMember.context_id)
        .join(LtiPlatform, LtiPlatform.id == LtiPendingMember.platform_id)
        .outerjoin(
            LtiUser,
            (LtiUser.platform_id == LtiPendingMember.platform_id)
            & (LtiUser.subject == LtiPendingMember.subject),
        )
        .where(LtiContext.course_id == course_id, LtiUser.linked_at.is_(None))
        .order_by(LtiPendingMember.id)
    ).all()
    return [
        PendingMemberOut(user_id=user_id, platform=name, since=since)
        for user_id, since, name in rows
    ]
