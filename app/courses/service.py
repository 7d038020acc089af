"""Courses and their members: creating, listing and changing them, joining by code.

Functions take an open ``Session``, raise ``ApiError`` for what the caller got wrong, and
commit only when everything they change is valid, so a refused request changes nothing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.accounts import (
    RESET_LINK_LIFETIME,
    AccountError,
    find_or_create,
    issue_reset_link,
    normalize_email,
    person_matches,
)
from app.auth.models import User
from app.auth.tokens import Principal
from app.core.errors import ApiError
from app.courses.deps import CourseAccess, CourseRole, course_not_found
from app.courses.models import Course, Membership
from app.courses.schemas import (
    CourseOut,
    CourseUpdate,
    MemberCreate,
    MemberOut,
    MemberStatus,
    MemberUpdate,
    SectionCount,
)
from app.courses.tenancy import check_credentials, course_person
from app.db.base import utcnow
from app.mail.messages import INVITATION
from app.mail.models import MailOut

# No 0/O or 1/I/L: codes are read off a projector and typed by hand. 10 symbols of 31: ~50 bits,
# far beyond guessing through the rate of a web form.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 10


def new_join_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(code: str) -> str:
    return code.strip().upper()


def _course(session: Session, course_id: int) -> Course:
    course = session.get(Course, course_id)
    if course is None:
        raise course_not_found(course_id)
    return course


def _active_count(session: Session, course_id: int) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Membership)
            .where(Membership.course_id == course_id, Membership.status == "active")
        )
        or 0
    )


def course_out(
    session: Session, course: Course, role: CourseRole, section: str | None
) -> CourseOut:
    staff = role in ("ta", "instructor")
    return CourseOut(
        id=course.id,
        title=course.title,
        role=role,
        section=section,
        join_code=course.join_code if staff else None,
        archived_at=course.archived_at,
        created_at=course.created_at,
        members=_active_count(session, course.id) if staff else None,
        default_points=course.default_points if staff else None,
    )


# -- courses -----------------------------------------------------------------------------------


def create_course(session: Session, principal: Principal, title: str) -> CourseOut:
    course = Course(title=title.strip(), join_code=new_join_code(), created_by=principal.user_id)
    session.add(course)
    session.flush()
    session.add(Membership(course_id=course.id, user_id=principal.user_id, role="instructor"))
    session.commit()
    return course_out(session, course, "instructor", None)


def list_courses(
    session: Session, principal: Principal, limit: int, offset: int
) -> tuple[list[CourseOut], int]:
    """The caller's courses where their place is active; an admin's: every course."""
    if principal.is_admin:
        total = session.scalar(select(func.count()).select_from(Course)) or 0
        courses = session.scalars(
            select(Course).order_by(Course.id).limit(limit).offset(offset)
        ).all()
        return [course_out(session, c, "instructor", None) for c in courses], total
    where = (Membership.user_id == principal.user_id, Membership.status == "active")
    total = session.scalar(select(func.count()).select_from(Membership).where(*where)) or 0
    rows = session.execute(
        select(Course, Membership)
        .join(Membership, Membership.course_id == Course.id)
        .where(*where)
        .order_by(Course.id)
        .limit(limit)
        .offset(offset)
    ).all()
    out = [course_out(session, c, m.role, m.section) for c, m in rows]  # type: ignore[arg-type]
    return out, total


def get_course(session: Session, access: CourseAccess) -> CourseOut:
    return course_out(session, _course(session, access.course_id), access.role, access.section)


def update_course(session: Session, access: CourseAccess, change: CourseUpdate) -> CourseOut:
    course = _course(session, access.course_id)
    if change.title is not None:
        course.title = change.title.strip()
    if change.default_points is not None:
        course.default_points = change.default_points
    if change.archived is not None:
        course.archived_at = utcnow() if change.archived else None
        if change.archived:
            course.join_code = None
    if course.archived_at is not None and (change.joining_open or change.rotate_code):
        raise ApiError(
            409, "course_archived", "an archived course takes no one new; restore it first"
        )
    if change.joining_open is False:
        course.join_code = None
    elif change.rotate_code or (change.joining_open and course.join_code is None):
        course.join_code = new_join_code()
    session.commit()
    return course_out(session, course, access.role, access.section)


def archive_course(session: Session, access: CourseAccess) -> CourseOut:
    return update_course(session, access, CourseUpdate(archived=True))


def join_code_not_found() -> ApiError:
    return ApiError(
        404, "join_code_not_found", "no course takes this code (it may have changed)", "code"
    )


def join_course(session: Session, principal: Principal, code: str) -> tuple[CourseOut, bool]:
    """The caller becomes a student of the course with this code. Idempotent: a member who
    joins again keeps their place (and role) and gets ``False``."""
    code = normalize_code(code)
    course = session.scalars(select(Course).where(Course.join_code == code)).first()
    if course is None or course.archived_at is not None:
        raise join_code_not_found()
    member = _membership(session, course.id, principal.user_id)
    if member is not None:
        if member.status != "active":
            raise ApiError(
                403,
                "membership_inactive",
                f"your place in this course is {member.status}; ask its instructor",
                "code",
            )
        return course_out(session, course, member.role, member.section), False  # type: ignore[arg-type]
    session.add(Membership(course_id=course.id, user_id=principal.user_id, role="student"))
    try:
        session.commit()
    except IntegrityError:
        # The same person joining twice at once: the other request made the membership.
        session.rollback()
        return join_course(session, principal, code)
    return course_out(session, course, "student", None), True


# -- members -----------------------------------------------------------------------------------


def _membership(session: Session, course_id: int, user_id: int) -> Membership | None:
    return session.scalars(
        select(Membership).where(Membership.course_id == course_id, Membership.user_id == user_id)
    ).first()


def member_out(member: Membership, user: User) -> MemberOut:
    return MemberOut(
        user_id=user.id,
        email=user.email,
        name=user.name,
        role=member.role,
        section=member.section,
        status=member.status,
        has_password=user.password_hash is not None,
        joined_at=member.created_at,
    )


def clean_section(section: str | None) -> str | None:
    """Trimmed; empty means none."""
    if section is None:
        return None
    return section.strip() or None


@dataclass(frozen=True)
class MemberFilter:
    role: CourseRole | None = None
    section: str | None = None
    status: MemberStatus | None = None
    q: str | None = None


def list_members(
    session: Session, course_id: int, where: MemberFilter, limit: int, offset: int
) -> tuple[list[MemberOut], int]:
    conditions = [Membership.course_id == course_id]
    if where.role is not None:
        conditions.append(Membership.role == where.role)
    if where.section is not None:
        section = clean_section(where.section)
        conditions.append(
            Membership.section.is_(None) if section is None else Membership.section == section
        )
    if where.status is not None:
        conditions.append(Membership.status == where.status)
    if where.q:
        conditions.append(person_matches(where.q))
    base = select(Membership, User).join(User, User.id == Membership.user_id).where(*conditions)
    total = session.scalar(select(func.count()).select_from(base.subquery())) or 0
    rows = session.execute(
        base.order_by(func.lower(User.name), User.id).limit(limit).offset(offset)
    ).all()
    out = [member_out(m, u) for m, u in rows]
    latest = latest_invitations(session, course_id, [u.id for _, u in rows])
    for member in out:
        if member.user_id in latest:
            member.invitation, member.invited_at = latest[member.user_id]  # type: ignore[assignment]
    return out, total


def latest_invitations(
    session: Session, course_id: int, user_ids: list[int]
) -> dict[int, tuple[str, datetime]]:
    """Each person's latest invitation mail from this course: (its status, when)."""
    newest = (
        select(func.max(MailOut.id))
        .where(
            MailOut.course_id == course_id,
            MailOut.kind == INVITATION,
            MailOut.user_id.in_(user_ids),
        )
        .group_by(MailOut.user_id)
    )
    rows = session.execute(
        select(MailOut.user_id, MailOut.status, MailOut.created_at).where(MailOut.id.in_(newest))
    )
    return {int(uid): (status, at) for uid, status, at in rows if uid is not None}


def sections(session: Session, course_id: int) -> list[SectionCount]:
    rows = session.execute(
        select(Membership.section, Membership.role, func.count())
        .where(Membership.course_id == course_id, Membership.status == "active")
        .group_by(Membership.section, Membership.role)
    ).all()
    counts: dict[str | None, SectionCount] = {}
    for name, role, n in rows:
        entry = counts.setdefault(name, SectionCount(name=name, students=0, members=0))
        entry.members += n
        if role == "student":
            entry.students += n
    # Named sections in order, then the members without one.
    return sorted(counts.values(), key=lambda s: (s.name is None, s.name or ""))


def other_instructors(session: Session, course_id: int, user_id: int) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Membership)
            .where(
                Membership.course_id == course_id,
                Membership.role == "instructor",
                Membership.status == "active",
                Membership.user_id != user_id,
            )
        )
        or 0
    )


def last_instructor(user_id: int) -> ApiError:
    return ApiError(
        409,
        "last_instructor",
        "this is the course's last active instructor: make someone else instructor first",
        "user_id",
    )


def add_member(session: Session, course_id: int, body: MemberCreate) -> tuple[MemberOut, bool]:
    """One person by email; their account is made if they have none. True: account created."""
    try:
        email = normalize_email(body.email)
        user, created = find_or_create(session, email, body.name, course_id)
    except AccountError as exc:
        session.rollback()
        raise ApiError(422, "invalid_member", str(exc), "email") from None
    if _membership(session, course_id, user.id) is not None:
        session.rollback()
        raise ApiError(
            409, "already_member", f"{email} is already on this course's roster", "email"
        )
    member = Membership(
        course_id=course_id, user_id=user.id, role=body.role, section=clean_section(body.section)
    )
    session.add(member)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise ApiError(
            409, "already_member", f"{email} is already on this course's roster", "email"
        ) from None
    return member_out(member, user), created


def lock_roster(session: Session, course_id: int) -> None:
    """Serialises changes to one course's roster (PostgreSQL: a row lock on the course until
    commit; SQLite has one writer anyway), so two instructors demoting each other at once cannot
    both pass the last-instructor check."""
    session.execute(select(Course.id).where(Course.id == course_id).with_for_update())


def update_member(
    session: Session, course_id: int, user_id: int, change: MemberUpdate
) -> MemberOut:
    lock_roster(session, course_id)
    member, user = course_person(session, course_id, user_id)
    role = change.role or member.role
    status = change.status or member.status
    stays_instructor = role == "instructor" and status == "active"
    if (
        member.role == "instructor"
        and member.status == "active"
        and not stays_instructor
        and other_instructors(session, course_id, user_id) == 0
    ):
        raise last_instructor(user_id)
    member.role = role
    member.status = status
    if change.section is not None:
        member.section = clean_section(change.section)
    session.commit()
    return member_out(member, user)


def reset_link_for(session: Session, access: CourseAccess, user_id: int) -> tuple[str, datetime]:
    """A one-use password link for an active student of this course whose account is the
    course's to set up (``tenancy.credentials_refusal``)."""
    member, user = course_person(session, access.course_id, user_id)
    if member.role != "student" or member.status != "active":
        raise ApiError(
            403,
            "not_a_student",
            "password links are only for active students of this course",
            "user_id",
        )
    check_credentials(session, access, user)
    if user.disabled_at is not None:
        raise ApiError(403, "account_disabled", "this account is disabled", "user_id")
    expires_at = utcnow() + RESET_LINK_LIFETIME
    secret = issue_reset_link(session, user_id, access.principal.user_id)
    session.commit()
    return secret, expires_at
