"""Names and Role Provisioning Services: the LMS course's members become members of its
course (accounts made for those who never launched), so the gradebook lists them."""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.core.errors import ApiError
from app.courses.models import Membership
from app.db.base import utcnow
from app.db.engine import write_turn
from app.lti import claims as c
from app.lti.launch import LaunchError
from app.lti.models import LtiContext, LtiPlatform
from app.lti.pending_members import hold_member
from app.lti.provisioning import account_of, enroll
from app.lti.schemas import RosterSyncOut
from app.lti.services import PlatformError, access_token, memberships

log = logging.getLogger(__name__)


def contexts_of_course(session: Session, course_id: int) -> list[LtiContext]:
    return list(
        session.scalars(
            select(LtiContext).where(
                LtiContext.course_id == course_id, LtiContext.memberships_url.is_not(None)
            )
        )
    )


def sync_context(sessions: sessionmaker[Session], context_id: int) -> RosterSyncOut:
    """Reads the context's roster and enrolls every active member with their role."""
    with sessions() as session:
        context = session.get(LtiContext, context_id)
        assert context is not None
        platform = session.get(LtiPlatform, context.platform_id)
        assert platform is not None and context.memberships_url is not None
        session.expunge_all()
    token = access_token(sessions, platform, (c.SCOPE_MEMBERSHIPS,))
    members = memberships(context.memberships_url, token)
    added = pending = 0
    with sessions() as session:
        enrolled = set(
            session.scalars(
                select(Membership.user_id).where(Membership.course_id == context.course_id)
            )
        )
    # One short write transaction per member, each begun inside this process's write turn: a
    # launch's background sync and the instructor's "Sync roster" may run at once, and on SQLite a
    # transaction that read before the other's commit cannot write after it ("database is
    # locked"); nor does a long roster hold the turn that accepting submissions needs.
    for member in members:
        subject = member.get("user_id")
        role = c.course_role(member.get("roles"))
        if not isinstance(subject, str) or role is None:
            continue
        if member.get("status", "Active") != "Active":
            continue
        name = member.get("name") or " ".join(
            str(member.get(k, "")) for k in ("given_name", "family_name")
        )
        with sessions() as session, write_turn(session.get_bind()):
            if hold_member(session, platform, context, subject, member.get("email")):
                session.commit()
                pending += 1
                continue
            try:
                user_id = account_of(
                    session, platform, subject, member.get("email"), name, role, context.course_id
                )
            except LaunchError as exc:  # a trusted email whose account has another role
                log.info("roster sync skips %s: %s", subject, exc.message)
                continue
            enroll(session, context.course_id, user_id, role)
            session.commit()
        if user_id not in enrolled:
            enrolled.add(user_id)
            added += 1
    with sessions() as session, write_turn(session.get_bind()):
        row = session.get(LtiContext, context_id)
        assert row is not None
        row.roster_synced_at = utcnow()
        session.commit()
    return RosterSyncOut(members=len(members), added=added, pending=pending)


def sync_course(sessions: sessionmaker[Session], course_id: int) -> RosterSyncOut:
    """Every LMS course linked to this course, synced; 409 when none offers a roster."""
    with sessions() as session:
        ids = [ctx.id for ctx in contexts_of_course(session, course_id)]
    if not ids:
        raise ApiError(409, "no_lti_roster", "no LMS course with a roster service is linked here")
    total = added = pending = 0
    for context_id in ids:
        try:
            out = sync_context(sessions, context_id)
        except PlatformError as exc:
            raise ApiError(
                502, "lms_unavailable", f"the LMS did not give its roster: {exc}"
            ) from None
        total, added, pending = total + out.members, added + out.added, pending + out.pending
    return RosterSyncOut(members=total, added=added, pending=pending)
