"""Who may act on a person, or on a person's work, across courses: the one rule (issue 35).

Courses share one account table and do not trust each other:

- A course's staff act on a person only within their course, and only on what it owns: the
  person's place on its roster (``course_person``), its overrides (``course_students``) and
  scores (the gradebook reads only the course's students), their submissions in its
  assignments (``may_regrade``; reading them: the assignment's feedback view).
- An account's credentials (password links; a reset signs whoever redeems it in) are the
  person's own or an administrator's. The one thing a course's instructors may still do is
  give an account its first link while the account is wholly theirs: their course's
  enrolment made it, it is in no other course (in any status), holds no deployment role, and
  nobody has used it yet (``credentials_refusal``). That is what enrolling by a new email
  and the roster CSV rely on.

Admins act on everyone.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from app.auth.models import ApiToken, User
from app.auth.tokens import Principal
from app.core.errors import ApiError
from app.courses.deps import CourseAccess
from app.courses.models import Membership


def member_not_found(user_id: int) -> ApiError:
    return ApiError(404, "member_not_found", f"no member {user_id} in this course", "user_id")


def course_person(session: Session, course_id: int, user_id: int) -> tuple[Membership, User]:
    """The person's place in this course, and their account: a person the course has no
    place for is answered as unknown (404), whatever other course they are in."""
    member = session.scalars(
        select(Membership).where(Membership.course_id == course_id, Membership.user_id == user_id)
    ).first()
    user = session.get(User, user_id) if member is not None else None
    if member is None or user is None:
        raise member_not_found(user_id)
    return member, user


def course_students(session: Session, course_id: int, user_ids: Sequence[int]) -> set[int]:
    """Those of ``user_ids`` who are active students of this course: the only people its
    overrides may name."""
    return set(
        session.scalars(
            select(Membership.user_id).where(
                Membership.course_id == course_id,
                Membership.user_id.in_(user_ids),
                Membership.role == "student",
                Membership.status == "active",
            )
        )
    )


def has_been_used(session: Session, user: User) -> bool:
    """Someone has signed in as this account, or could: a password, a single sign-on
    identity or a token (live or revoked) was ever set. A browser session needs one of the
    first two (or an LMS identity, whose accounts no course makes), so they are the record."""
    if user.password_hash is not None or user.oidc_issuer is not None:
        return True
    return bool(session.scalar(select(exists().where(ApiToken.user_id == user.id))))


def credentials_refusal(session: Session, access: CourseAccess, user: User) -> str | None:
    """Why this course's caller may not issue a password link for ``user`` (None: they may).
    Admins may for anyone; the course's instructors only for an account wholly their
    course's (see the module)."""
    if access.principal.is_admin:
        return None
    if not access.can_manage:
        return "only the course's instructors give password links"
    if user.role != "member":
        return "this is a deployment instructor's or administrator's account"
    if user.created_by_course_id != access.course_id:
        return "this account was not made by this course"
    courses = session.scalar(
        select(func.count()).select_from(Membership).where(Membership.user_id == user.id)
    )
    if courses != 1:
        return "this account is in another course too"
    if has_been_used(session, user):
        return "this account has been used: its password is its owner's"
    return None


def check_credentials(session: Session, access: CourseAccess, user: User) -> None:
    """403 ``not_this_courses_account`` unless ``credentials_refusal`` has nothing to say."""
    why = credentials_refusal(session, access, user)
    if why is not None:
        raise ApiError(
            403,
            "not_this_courses_account",
            f"{why}: only the person or an administrator can reset it",
            "user_id",
        )


def may_regrade(session: Session, principal: Principal, course_id: int | None) -> bool:
    """A submission in an assignment of course ``course_id``: that course's active
    instructors (as for regrading the whole assignment) and admins. Practice (``None``), which
    no course owns: the catalog's staff, as ``POST /api/regrades`` regrades all of it."""
    if principal.is_admin:
        return True
    if course_id is None:
        return principal.is_instructor
    role = session.scalar(
        select(Membership.role).where(
            Membership.course_id == course_id,
            Membership.user_id == principal.user_id,
            Membership.status == "active",
        )
    )
    return role == "instructor"
