"""What a verified launch or roster puts in TensorJudge: the LMS course's course (made on its
first launch), the person's account (by the platform's ``sub``), their membership with the
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
from app.courses.models import Course, Membership
from app.lti import claims as c
from app.lti.launch import LaunchError
from app.lti.models import LtiContext, LtiLineItem, LtiPlatform, LtiUser

Row = TypeVar("Row")


def _once(session: Session, find: Callable[[], Row | None], make: Callable[[], Row]) -> Row:
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


def context_of(session: Session, platform: LtiPlatform, claims: dict[str, Any]) -> LtiContext:
    """The LMS course of a launch, with its TensorJudge course (made on the first launch); its
    service endpoints are refreshed from the launch."""
    context = claims.get(c.CONTEXT)
    if not isinstance(context, dict) or not isinstance(context.get("id"), str):
        raise LaunchError(400, "no_context", "this launch names no LMS course (context)")
    context_id = str(context["id"])[:255]
    title = str(context.get("title") or context.get("label") or "LMS course")[:200]

    def find() -> LtiContext | None:
        return session.scalars(
            select(LtiContext).where(
                LtiContext.platform_id == platform.id, LtiContext.context_id == context_id
            )
        ).first()

    def make() -> LtiContext:
        course = Course(title=title)
        session.add(course)
        session.flush()
        return LtiContext(
            platform_id=platform.id,
            context_id=context_id,
            course_id=course.id,
            deployment_id=str(claims[c.DEPLOYMENT_ID]),
            ags_scopes="",
        )

    row = _once(session, find, make)
    ags = claims.get(c.AGS_ENDPOINT)
    if isinstance(ags, dict):
        if isinstance(ags.get("lineitems"), str):
            row.lineitems_url = ags["lineitems"][:1000]
        if isinstance(ags.get("scope"), list):
            row.ags_scopes = " ".join(str(s) for s in ags["scope"])
    nrps = claims.get(c.NRPS)
    if isinstance(nrps, dict) and isinstance(nrps.get("context_memberships_url"), str):
        row.memberships_url = nrps["context_memberships_url"][:1000]
    return row


def account_of(
    session: Session, platform_id: int, subject: str, email: object, name: object
) -> int:
    """The account of the platform's person ``subject``: the one linked to it, else a new
    one. An existing account with the same email is not taken over (an LMS's email is not
    proof of owning that account); the new account then has no email."""

    def find() -> LtiUser | None:
        return session.scalars(
            select(LtiUser).where(LtiUser.platform_id == platform_id, LtiUser.subject == subject)
        ).first()

    def make() -> LtiUser:
        address = email if isinstance(email, str) and "@" in email else None
        try:
            if address is not None and find_by_email(session, address) is not None:
                address = None
        except AccountError:
            address = None
        label = (name if isinstance(name, str) and name.strip() else None) or address or subject
        user = create_user(session, address, label[:200])
        return LtiUser(platform_id=platform_id, subject=subject, user_id=user.id)

    return _once(session, find, make).user_id


def enroll(session: Session, course_id: int, user_id: int, role: str) -> None:
    """The person's membership with the LMS's role; a blocked or removed one stays so."""
    member = session.scalars(
        select(Membership).where(Membership.course_id == course_id, Membership.user_id == user_id)
    ).first()
    if member is None:
        _once(
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
    return _once(
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
