"""Who may do what in a course: the caller's role there, resolved once per request.

A course is invisible to anyone not in it (404, as for a course that does not exist), so ids
reveal nothing. A blocked or removed member gets 403 naming why. Admins act as instructors of
every course.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Path
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.deps import CurrentUser
from app.auth.tokens import Principal
from app.core.deps import SessionsDep
from app.core.errors import ApiError
from app.core.openapi import documented
from app.courses.models import Course, Membership

CourseRole = Literal["student", "ta", "instructor"]
STAFF_ROLES: tuple[CourseRole, ...] = ("ta", "instructor")


@dataclass(frozen=True)
class CourseAccess:
    course_id: int
    principal: Principal
    role: CourseRole
    section: str | None

    @property
    def is_staff(self) -> bool:
        """TAs and instructors: see every student's work, grade, grant overrides."""
        return self.role in STAFF_ROLES

    @property
    def can_manage(self) -> bool:
        """Instructors: change the course's settings, staff and assignments."""
        return self.role == "instructor"


def course_not_found(course_id: int) -> ApiError:
    return ApiError(404, "course_not_found", f"no course {course_id}", "course_id")


def is_course_staff(session: Session, course_id: int, principal: Principal) -> bool:
    """The same rule as ``CourseStaff``, for code that asks rather than guards a route: an
    active TA or instructor of the course, or an admin."""
    if principal.is_admin:
        return True
    role = session.scalar(
        select(Membership.role).where(
            Membership.course_id == course_id,
            Membership.user_id == principal.user_id,
            Membership.status == "active",
        )
    )
    return role in STAFF_ROLES


def resolve_access(session: Session, course_id: int, principal: Principal) -> CourseAccess:
    course = session.get(Course, course_id)
    if course is None:
        raise course_not_found(course_id)
    if principal.is_admin:
        return CourseAccess(course_id, principal, "instructor", None)
    member = session.scalars(
        select(Membership).where(
            Membership.course_id == course_id, Membership.user_id == principal.user_id
        )
    ).first()
    if member is None:
        raise course_not_found(course_id)
    if member.status != "active":
        raise ApiError(403, "membership_inactive", f"your place in this course is {member.status}")
    role: CourseRole = member.role  # type: ignore[assignment]
    return CourseAccess(course_id, principal, role, member.section)


def _resolve(sessions: sessionmaker[Session], course_id: int, principal: Principal) -> CourseAccess:
    with sessions() as session:
        return resolve_access(session, course_id, principal)


CourseId = Annotated[int, Path(ge=1, le=2**53, description="The course's id.")]


@documented(
    {403: "Your place in the course is blocked or removed", 404: "No such course (or not yours)"},
    optional=False,
)
async def course_member(
    course_id: CourseId, principal: CurrentUser, sessions: SessionsDep
) -> CourseAccess:
    return await run_in_threadpool(_resolve, sessions, course_id, principal)


@documented({403: "Not the course's staff"}, optional=False)
async def course_staff(access: Annotated[CourseAccess, Depends(course_member)]) -> CourseAccess:
    if not access.is_staff:
        raise ApiError(403, "forbidden", "this is for the course's staff")
    return access


@documented({403: "Not the course's instructor"}, optional=False)
async def course_instructor(
    access: Annotated[CourseAccess, Depends(course_member)],
) -> CourseAccess:
    if not access.can_manage:
        raise ApiError(403, "forbidden", "this is for the course's instructors")
    return access


CourseMember = Annotated[CourseAccess, Depends(course_member)]
CourseStaff = Annotated[CourseAccess, Depends(course_staff)]
CourseInstructor = Annotated[CourseAccess, Depends(course_instructor)]
