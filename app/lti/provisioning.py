"""What a verified launch or roster puts in TensorJudge: the LMS course's course (linked by its
instructor on its first launch), the person's account (by the platform's ``sub``, or a trusted
platform's email), their membership with the
role the LMS gives, and the line item row of the linked assignment. Races between two first
launches are settled by the unique constraints (the loser reads the winner's row)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.assignments.models import Assignment, AssignmentProblem
from app.auth.accounts import AccountError, create_user, find_by_email
from app.auth.models import User
from app.courses.models import Course, Membership
from app.db.base import utcnow
from app.lti import claims as c
from app.lti.launch import LaunchError
from app.lti.models import LtiContext, LtiLineItem, LtiPlatform, LtiUser

Row = TypeVar("Row")


def once(session: Session, find: Callable[[], Row | None], make: Callable[[], Row]) -> Row:
    """The row ``find`` reads, else the one ``make`` adds; when another transaction added it
    first (the unique constraint says so), that one."""
    found = find()
    if found is not None:
        return found
    try:
        with session.begin_nested():
            row = make()
            session.add(row)
            session.flush()
        return row
    except IntegrityError:
        found = find()
        assert found is not None
        return found


def context_key(claims: dict[str, Any]) -> tuple[str, str]:
    """The LMS course's id and title a launch names."""
    context = claims.get(c.CONTEXT)
    if not isinstance(context, dict) or not isinstance(context.get("id"), str):
        raise LaunchError(400, "no_context", "this launch names no LMS course (context)")
    title = str(context.get("title") or context.get("label") or "LMS course")[:200]
    return str(context["id"])[:255], title


def find_context(session: Session, platform_id: int, context_id: str) -> LtiContext | None:
    return session.scalars(
        select(LtiContext).where(
            LtiContext.platform_id == platform_id, LtiContext.context_id == context_id
        )
    ).first()


def refresh_endpoints(row: LtiContext, claims: dict[str, Any]) -> None:
    """The service endpoints the launch names, kept for the sender and the roster sync."""
    ags = claims.get(c.AGS_ENDPOINT)
    if isinstance(ags, dict):
        if isinstance(ags.get("lineitems"), str):
            row.lineitems_url = ags["lineitems"][:1000]
        if isinstance(ags.get("scope"), list):
            row.ags_scopes = " ".join(str(s) for s in ags["scope"])
    nrps = claims.get(c.NRPS)
    if isinstance(nrps, dict) and isinstance(nrps.get("context_memberships_url"), str):
        row.memberships_url = nrps["context_memberships_url"][:1000]


def context_of(
    session: Session, platform: LtiPlatform, claims: dict[str, Any]
) -> LtiContext | None:
    """The LMS course of a launch, its service endpoints refreshed; None until its
    instructor has linked it to a course (``link_context``)."""
    context_id, _ = context_key(claims)
    row = find_context(session, platform.id, context_id)
    if row is not None:
        refresh_endpoints(row, claims)
    return row


def link_context(
    session: Session, platform: LtiPlatform, claims: dict[str, Any], course_id: int | None
) -> LtiContext:
    """Links the launch's LMS course to ``course_id`` (None: a new course with its title). A
    context links to one course: when another pick linked it first, that one stands and this
    one is refused."""
    context_id, title = context_key(claims)

    def make() -> LtiContext:
        course = course_id
        if course is None:
            made = Course(title=title)
            session.add(made)
            session.flush()
            course = made.id
        return LtiContext(
            platform_id=platform.id,
            context_id=context_id,
            course_id=course,
            deployment_id=str(claims[c.DEPLOYMENT_ID]),
            ags_scopes="",
        )

    existing = find_context(session, platform.id, context_id)
    row = once(session, lambda: find_context(session, platform.id, context_id), make)
    if existing is not None or (course_id is not None and row.course_id != course_id):
        raise LaunchError(409, "already_linked", "this LMS course is already linked to a course")
    refresh_endpoints(row, claims)
    return row


def _email_conflict(
    session: Session, platform_id: int, user: User, role: str, course_id: int | None
) -> str | None:
    """Why a trusted platform's email may still not sign its person in as ``user``: an LMS
    role below the account's own, another role in the linked course, another LMS person."""
    if user.disabled_at is not None:
        return "the account with your email is deactivated"
    if user.role == "admin" or (user.role == "instructor" and role != "instructor"):
        return "the account with your email has another role here than your LMS gives you"
    if course_id is not None:
        held = session.scalar(
            select(Membership.role).where(
                Membership.course_id == course_id, Membership.user_id == user.id
            )
        )
        if held is not None and held != role:
            return "the account with your email has another role in this course"
    taken = session.scalar(
        select(LtiUser.id).where(LtiUser.platform_id == platform_id, LtiUser.user_id == user.id)
    )
    if taken is not None:
        return "the account with your email is linked to another person of this LMS"
    return None


def account_of(
    session: Session,
    platform: LtiPlatform,
    subject: str,
    email: object,
    name: object,
    role: str,
    course_id: int | None,
) -> int:
    """The account of the platform's person ``subject``: the one linked to it; else, on a
    platform an administrator trusts for email, the account with that email (refused with a
    ``LaunchError``, nothing written, when that account's role differs); else a new one. On
    an untrusted platform an existing account with the same email is never taken over (an
    LMS's email is not proof of owning that account): the new account has no email, and its
    person may link their own account later, signed in (``app.lti.identity``)."""

    def find() -> LtiUser | None:
        return session.scalars(
            select(LtiUser).where(LtiUser.platform_id == platform.id, LtiUser.subject == subject)
        ).first()

    found = find()
    if found is not None:
        return found.user_id
    address = email if isinstance(email, str) and "@" in email else None
    try:
        existing = find_by_email(session, address) if address is not None else None
    except AccountError:
        address = existing = None
    if existing is not None and platform.trust_email:
        why = _email_conflict(session, platform.id, existing, role, course_id)
        if why is not None:
            raise LaunchError(
                409,
                "email_role_conflict",
                f"{why}; sign in to TensorJudge and link your LMS account there, "
                "or ask an administrator",
            )
        matched = existing.id
        row = once(
            session,
            find,
            lambda: LtiUser(
                platform_id=platform.id, subject=subject, user_id=matched, linked_at=utcnow()
            ),
        )
        return row.user_id

    def make() -> LtiUser:
        label = (name if isinstance(name, str) and name.strip() else None) or address or subject
        user = create_user(session, None if existing is not None else address, label[:200])
        return LtiUser(platform_id=platform.id, subject=subject, user_id=user.id)

    try:
        return once(session, find, make).user_id
    except AccountError:
        # Another sync or launch made this person's account (with its email) since we looked:
        # theirs, linked to the same subject in the same transaction, is the one.
        raced = find()
        if raced is None:
            raise
        return raced.user_id


def enroll(session: Session, course_id: int, user_id: int, role: str) -> None:
    """The person's membership with the LMS's role; a blocked or removed one stays so."""
    member = session.scalars(
        select(Membership).where(Membership.course_id == course_id, Membership.user_id == user_id)
    ).first()
    if member is None:
        once(
            session,
            lambda: session.scalars(
                select(Membership).where(
                    Membership.course_id == course_id, Membership.user_id == user_id
                )
            ).first(),
            lambda: Membership(course_id=course_id, user_id=user_id, role=role),
        )
    elif member.status == "active":
        member.role = role


def line_item_of(session: Session, context_id: int, assignment_id: int) -> LtiLineItem:
    """The assignment's one line item row in this LMS course (its URL may not be known yet)."""
    return once(
        session,
        lambda: session.scalars(
            select(LtiLineItem).where(
                LtiLineItem.context_id == context_id, LtiLineItem.assignment_id == assignment_id
            )
        ).first(),
        lambda: LtiLineItem(context_id=context_id, assignment_id=assignment_id),
    )


@dataclass(frozen=True)
class Target:
    assignment_id: int
    problem_id: str | None


def target_of(session: Session, context: LtiContext, claims: dict[str, Any]) -> Target | None:
    """The assignment (and problem) a resource link points to: set by deep linking in its
    custom parameters. One of another course is refused (an LMS instructor could edit them)."""
    custom = claims.get(c.CUSTOM)
    if not isinstance(custom, dict) or "tj_assignment_id" not in custom:
        return None
    try:
        assignment_id = int(str(custom["tj_assignment_id"]))
    except ValueError:
        raise LaunchError(400, "bad_link", "this link's assignment is not a number") from None
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.course_id != context.course_id:
        raise LaunchError(404, "bad_link", "this link's assignment is not in this LMS course")
    problem = custom.get("tj_problem_id")
    if problem is not None:
        known = session.scalar(
            select(AssignmentProblem.id).where(
                AssignmentProblem.assignment_id == assignment_id,
                AssignmentProblem.problem_id == str(problem),
            )
        )
        if known is None:
            raise LaunchError(404, "bad_link", "this link's problem is not in its assignment")
    return Target(assignment_id, None if problem is None else str(problem))


def line_item_from_launch(
    session: Session, context: LtiContext, target: Target, claims: dict[str, Any]
) -> None:
    """Records the assignment's line item; the launch names its URL when the platform made it
    from the deep-linking answer."""
    row = line_item_of(session, context.id, target.assignment_id)
    ags = claims.get(c.AGS_ENDPOINT)
    if row.url is None and isinstance(ags, dict) and isinstance(ags.get("lineitem"), str):
        row.url = ags["lineitem"][:1000]


def first_problem(session: Session, assignment_id: int) -> str | None:
    rows = session.scalars(
        select(AssignmentProblem.problem_id)
        .where(AssignmentProblem.assignment_id == assignment_id)
        .order_by(AssignmentProblem.position, AssignmentProblem.id)
        .limit(2)
    ).all()
    return rows[0] if len(rows) == 1 else None
