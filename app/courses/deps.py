"""Who may do what in a course: the caller's role there, resolved once per request.

A course is invisible to anyone not in it (404, as for a course that does not exist), so ids
reveal nothing. A blocked or removed member gets 403 naming why. Admins act as instructors of
every course.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, Path, Request
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.deps import (
    CHALLENGE,
    OPTIONAL_PRINCIPAL_ERRORS,
    REQUIRE_USER_ERRORS,
    Credentials,
    CurrentUser,
    Proof,
    principal_of_proof,
    proof_of,
    signed_in,
)
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


MEMBER_ERRORS = {
    403: "Your place in the course is blocked or removed",
    404: "No such course (or not yours)",
}


@documented(MEMBER_ERRORS, optional=False)
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


@dataclass(frozen=True)
class CourseCaller:
    """``CourseMember`` not looked up yet: the request's proof of its caller and the course,
    checked by ``access`` in a session of the route's own thread call. For a hot route that
    does all its database work in one call (submitting: app.submissions.routes); each
    dependency that reads the database is a hop to a thread and back."""

    course_id: int
    proof: Proof

    def access(self, session: Session) -> CourseAccess:
        """What ``CourseMember`` answers, with the same refusals."""
        principal = signed_in(principal_of_proof(session, self.proof))
        return resolve_access(session, self.course_id, principal)


def _joined(*docs: dict[int, str]) -> dict[int, str]:
    """The errors of several dependencies, as a route depending on all of them documents them."""
    out: dict[int, list[str]] = {}
    for doc in docs:
        for status, text in doc.items():
            out.setdefault(status, []).append(text)
    return {status: "; ".join(texts) for status, texts in out.items()}


# Documented as CourseMember is (its own errors, then require_user's, then optional_principal's).
@documented(
    _joined(MEMBER_ERRORS, REQUIRE_USER_ERRORS, OPTIONAL_PRINCIPAL_ERRORS),
    optional=False,
    headers=CHALLENGE,
)
async def course_caller(
    request: Request, course_id: CourseId, credentials: Credentials
) -> CourseCaller:
    proof = proof_of(request, credentials)
    if proof.token is None and proof.cookie is None:
        signed_in(None)  # anonymous: refused without the database
    return CourseCaller(course_id, proof)


CourseMember = Annotated[CourseAccess, Depends(course_member)]
CourseCallerDep = Annotated[CourseCaller, Depends(course_caller)]
CourseStaff = Annotated[CourseAccess, Depends(course_staff)]
CourseInstructor = Annotated[CourseAccess, Depends(course_instructor)]
