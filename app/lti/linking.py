"""One course and one account whether a person starts on the web or in the LMS.

An LMS course's first launch by its instructor waits (``LtiPendingLink``) until they link it to
a course they teach here, or make one; the launch's verified claims are then replayed. A
person's LMS identity made by a launch may be linked once to their existing account: the
offer (``LtiIdentityLink``) lives in the launching browser's cookie and is taken by that
browser, signed in to the account."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.auth.models import User
from app.auth.tokens import digest
from app.courses.models import Course, Membership
from app.db.base import utcnow
from app.lti.launch import LaunchError
from app.lti.models import LtiContext, LtiIdentityLink, LtiPendingLink, LtiUser
from app.lti.pending_members import forget

PENDING_LIFETIME = timedelta(minutes=30)
IDENTITY_LIFETIME = timedelta(hours=1)
IDENTITY_COOKIE = "tj_lti_identity"


def _use(session: Session, model: type[LtiPendingLink] | type[LtiIdentityLink], key: str) -> None:
    """Marks a one-use row used; a second taker (a double click, a replay) is refused."""
    done = session.execute(
        update(model)
        .where(model.id == key, model.used_at.is_(None))
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not done.rowcount:  # type: ignore[attr-defined]
        raise LaunchError(400, "already_used", "this link was already used; launch again")


def begin_pending(session: Session, platform_id: int, subject: str, claims: dict[str, Any]) -> str:
    """The linking form's secret; the caller commits."""
    session.execute(
        delete(LtiPendingLink).where(
            LtiPendingLink.platform_id == platform_id,
            LtiPendingLink.subject == subject,
            LtiPendingLink.expires_at < utcnow(),
        )
    )
    secret = secrets.token_urlsafe(32)
    session.add(
        LtiPendingLink(
            id=digest(secret),
            platform_id=platform_id,
            subject=subject,
            claims=json.dumps(claims),
            expires_at=utcnow() + PENDING_LIFETIME,
        )
    )
    return secret


def identity_of(session: Session, platform_id: int, subject: str) -> LtiUser | None:
    return session.scalars(
        select(LtiUser).where(LtiUser.platform_id == platform_id, LtiUser.subject == subject)
    ).first()


def claim_pending(
    session: Session, secret: str, user_id: int | None
) -> tuple[LtiPendingLink, dict[str, Any]]:
    """The pending link and its launch's claims, taken once by the person who launched it
    (signed in as the account their LMS identity has now)."""
    row = session.get(LtiPendingLink, digest(secret))
    identity = None if row is None else identity_of(session, row.platform_id, row.subject)
    if row is None or identity is None or user_id is None or identity.user_id != user_id:
        raise LaunchError(403, "invalid_link", "this link was not started by you; launch again")
    if row.expires_at <= utcnow():
        raise LaunchError(400, "invalid_link", "this link took too long; launch again")
    _use(session, LtiPendingLink, row.id)
    claims: dict[str, Any] = json.loads(row.claims)
    return row, claims


def courses_taught(session: Session, user_id: int) -> list[tuple[int, str]]:
    """The courses the account is an active instructor of: what it may link an LMS course to."""
    return [
        (course_id, title)
        for course_id, title in session.execute(
            select(Course.id, Course.title)
            .join(Membership, Membership.course_id == Course.id)
            .where(
                Membership.user_id == user_id,
                Membership.role == "instructor",
                Membership.status == "active",
            )
            .order_by(Course.id)
        )
    ]


def check_teaches(session: Session, user_id: int, course_id: int) -> None:
    if course_id not in {cid for cid, _ in courses_taught(session, user_id)}:
        raise LaunchError(
            403, "not_your_course", "only an instructor of that course can link it to the LMS"
        )


def offer_identity(session: Session, identity: LtiUser, destination: str) -> str | None:
    """The cookie's secret that lets this browser link the LMS identity to an existing
    account, while the identity still has the account its first launch made; the caller
    commits."""
    if identity.linked_at is not None:
        return None
    session.execute(
        delete(LtiIdentityLink).where(
            LtiIdentityLink.lti_user_id == identity.id, LtiIdentityLink.expires_at < utcnow()
        )
    )
    secret = secrets.token_urlsafe(32)
    session.add(
        LtiIdentityLink(
            id=digest(secret),
            lti_user_id=identity.id,
            destination=destination[:1000],
            expires_at=utcnow() + IDENTITY_LIFETIME,
        )
    )
    return secret


def identity_offer(session: Session, secret: str | None) -> tuple[LtiIdentityLink, LtiUser]:
    row = None if not secret else session.get(LtiIdentityLink, digest(secret))
    if row is None or row.used_at is not None or row.expires_at <= utcnow():
        raise LaunchError(
            403, "no_identity", "no LMS account waits to be linked in this browser; launch again"
        )
    identity = session.get(LtiUser, row.lti_user_id)
    assert identity is not None
    if identity.linked_at is not None:
        raise LaunchError(409, "already_linked", "this LMS account is already linked")
    return row, identity


def link_identity(session: Session, secret: str | None, user_id: int | None) -> str:
    """Links the offered LMS identity to the signed-in account ``user_id``: later launches
    sign in as it; the memberships the LMS gave the launch-made account move to it (where it
    has none already: its own role in a course is kept). Returns where to go; the caller
    commits."""
    row, identity = identity_offer(session, secret)
    if user_id is None or user_id == identity.user_id:
        raise LaunchError(
            403, "sign_in_first", "sign in with your existing TensorJudge account first"
        )
    target = session.get(User, user_id)
    if target is None or target.role == "admin":
        # Whoever can act as this person in the LMS (its administrators can) would be one here.
        raise LaunchError(
            403, "admin_account", "an administrator's account is not linked to an LMS account"
        )
    taken = session.scalar(
        select(LtiUser.id).where(
            LtiUser.platform_id == identity.platform_id, LtiUser.user_id == user_id
        )
    )
    if taken is not None:
        raise LaunchError(
            409, "account_linked", "your account is already linked to another person of this LMS"
        )
    _use(session, LtiIdentityLink, row.id)
    made = identity.user_id
    courses = select(LtiContext.course_id).where(LtiContext.platform_id == identity.platform_id)
    held = set(session.scalars(select(Membership.course_id).where(Membership.user_id == user_id)))
    for member in session.scalars(
        select(Membership).where(Membership.user_id == made, Membership.course_id.in_(courses))
    ).all():
        if member.course_id in held:
            session.delete(member)
        else:
            member.user_id = user_id
    identity.user_id = user_id
    identity.linked_at = utcnow()
    forget(session, identity.platform_id, identity.subject)
    session.execute(
        delete(LtiIdentityLink).where(
            LtiIdentityLink.lti_user_id == identity.id, LtiIdentityLink.id != row.id
        )
    )
    return row.destination
