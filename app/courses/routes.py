"""Courses API: ``/api/courses``, joining by code, the roster and its CSV upload.

Who may call what: creating a course takes a deployment instructor (or admin); anyone signed in
may list their courses and join by code; a course's members read it; its staff (TAs and
instructors) read the roster; only its instructors (and admins) change the course or the roster.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.auth.deps import CurrentUser, Instructor
from app.core.bodies import BodyCap, declared_length, json_body_schema, read_capped, read_model
from app.core.deps import SessionsDep, SettingsDep, site_url
from app.core.errors import ApiError, error_responses
from app.courses import roster, service
from app.courses.deps import CourseInstructor, CourseMember, CourseRole, CourseStaff
from app.courses.schemas import (
    CourseCreate,
    CourseOut,
    CoursePage,
    CourseUpdate,
    JoinRequest,
    JoinResult,
    MemberCreate,
    MemberOut,
    MemberPage,
    MemberStatus,
    MemberUpdate,
    ResetLink,
    RosterErrorResponse,
    RosterResult,
    SectionList,
)

router = APIRouter(prefix="/api/courses", tags=["courses"])

# The JSON bodies here are a few short fields.
JSON_CAP = BodyCap(16 * 1024)
Model = TypeVar("Model", bound=BaseModel)
UserId = Annotated[int, Path(ge=1, le=2**53, description="The member's account id.")]
Limit = Annotated[int, Query(ge=1, le=500, description="Page size.")]
Offset = Annotated[int, Query(ge=0, le=2**31, description="Items to skip.")]

COURSE_ERRORS = {404: "No such course, or the caller is not in it"}
MEMBER_ERRORS = {**COURSE_ERRORS, 404: "No such course or member"}


def roster_cap(max_bytes: int) -> BodyCap:
    return BodyCap(max_bytes, "roster_too_large", f"the roster file is over {max_bytes} bytes")


def _run(sessions: sessionmaker[Session], fn: Any, *args: Any) -> Any:
    with sessions() as session:
        return fn(session, *args)


# -- courses -----------------------------------------------------------------------------------


@router.post(
    "",
    status_code=201,
    response_model=CourseOut,
    openapi_extra=json_body_schema(CourseCreate),
    responses=error_responses(
        {400: "Body is not JSON", 413: "Body too large", 422: "Invalid title"}
    ),
)
async def create_course(
    request: Request, principal: Instructor, sessions: SessionsDep
) -> CourseOut:
    """A new course (open to joining by its code); the caller becomes its instructor."""
    body = await read_model(request, JSON_CAP, CourseCreate)
    out: CourseOut = await run_in_threadpool(
        _run, sessions, service.create_course, principal, body.title
    )
    return out


@router.get(
    "",
    response_model=CoursePage,
)
async def list_courses(
    principal: CurrentUser, sessions: SessionsDep, limit: Limit = 50, offset: Offset = 0
) -> CoursePage:
    """The caller's courses (where their place is active) with their role; admins: all."""
    items, total = await run_in_threadpool(
        _run, sessions, service.list_courses, principal, limit, offset
    )
    return CoursePage(items=items, total=total, limit=limit, offset=offset)


@router.post(
    "/join",
    response_model=JoinResult,
    openapi_extra=json_body_schema(JoinRequest),
    responses=error_responses(
        {
            400: "Body is not JSON",
            403: "Blocked or removed from that course",
            404: "No open course has this code",
            413: "Body too large",
            422: "Invalid body",
        }
    ),
)
async def join_course(
    request: Request, principal: CurrentUser, sessions: SessionsDep
) -> JoinResult:
    """Join as a student. Idempotent: a member joining again gets 200 with ``joined: false``."""
    body = await read_model(request, JSON_CAP, JoinRequest)
    course, joined = await run_in_threadpool(
        _run, sessions, service.join_course, principal, body.code
    )
    return JoinResult(course=course, joined=joined)


# ":int": "/api/courses/join" is another route, so a GET or PATCH to it is a 405, not a course.
@router.get("/{course_id:int}", response_model=CourseOut, responses=error_responses(COURSE_ERRORS))
async def get_course(access: CourseMember, sessions: SessionsDep) -> CourseOut:
    """The course and the caller's role; staff also see the join code and the member count."""
    out: CourseOut = await run_in_threadpool(_run, sessions, service.get_course, access)
    return out


@router.patch(
    "/{course_id:int}",
    response_model=CourseOut,
    openapi_extra=json_body_schema(CourseUpdate),
    responses=error_responses(
        {
            **COURSE_ERRORS,
            400: "Body is not JSON",
            409: "Archived course cannot open joining",
            413: "Body too large",
            422: "Invalid body",
        }
    ),
)
async def update_course(
    request: Request, access: CourseInstructor, sessions: SessionsDep
) -> CourseOut:
    """Instructors: rename, open or close joining by code, rotate the code, archive/restore."""
    body = await read_model(request, JSON_CAP, CourseUpdate)
    out: CourseOut = await run_in_threadpool(_run, sessions, service.update_course, access, body)
    return out


@router.delete(
    "/{course_id:int}", response_model=CourseOut, responses=error_responses(COURSE_ERRORS)
)
async def archive_course(access: CourseInstructor, sessions: SessionsDep) -> CourseOut:
    """Archives (never deletes): the roster, submissions and grades stay; joining closes.
    ``PATCH {"archived": false}`` restores it."""
    out: CourseOut = await run_in_threadpool(_run, sessions, service.archive_course, access)
    return out


# -- roster ------------------------------------------------------------------------------------


@router.get(
    "/{course_id}/members", response_model=MemberPage, responses=error_responses(COURSE_ERRORS)
)
async def list_members(
    access: CourseStaff,
    sessions: SessionsDep,
    role: CourseRole | None = None,
    section: Annotated[
        str | None, Query(max_length=64, description='"" lists members with no section.')
    ] = None,
    status: MemberStatus | None = None,
    q: Annotated[str | None, Query(max_length=200, description="Part of a name or email.")] = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> MemberPage:
    """Staff: the roster, filtered by role, section, status or a search."""
    where = service.MemberFilter(role=role, section=section, status=status, q=q)
    items, total = await run_in_threadpool(
        _run, sessions, service.list_members, access.course_id, where, limit, offset
    )
    return MemberPage(items=items, total=total, limit=limit, offset=offset)


@router.get(
    "/{course_id}/sections", response_model=SectionList, responses=error_responses(COURSE_ERRORS)
)
async def list_sections(access: CourseStaff, sessions: SessionsDep) -> SectionList:
    """Staff: each section's name with its active students and members."""
    found = await run_in_threadpool(_run, sessions, service.sections, access.course_id)
    return SectionList(sections=found)


@router.post(
    "/{course_id}/members",
    status_code=201,
    response_model=MemberOut,
    openapi_extra=json_body_schema(MemberCreate),
    responses=error_responses(
        {
            **COURSE_ERRORS,
            400: "Body is not JSON",
            409: "Already on the roster",
            413: "Body too large",
            422: "Invalid email, role or section",
        }
    ),
)
async def add_member(
    request: Request, access: CourseInstructor, sessions: SessionsDep
) -> MemberOut:
    """Instructors: enrol one person by email (an account is made if they have none)."""
    body = await read_model(request, JSON_CAP, MemberCreate)
    member, _ = await run_in_threadpool(_run, sessions, service.add_member, access.course_id, body)
    out: MemberOut = member
    return out


@router.patch(
    "/{course_id}/members/{user_id}",
    response_model=MemberOut,
    openapi_extra=json_body_schema(MemberUpdate),
    responses=error_responses(
        {
            **MEMBER_ERRORS,
            400: "Body is not JSON",
            409: "Would leave the course without an active instructor",
            413: "Body too large",
            422: "Invalid body",
        }
    ),
)
async def update_member(
    request: Request, user_id: UserId, access: CourseInstructor, sessions: SessionsDep
) -> MemberOut:
    """Instructors: change a member's role, section or status (active, blocked, removed)."""
    body = await read_model(request, JSON_CAP, MemberUpdate)
    out: MemberOut = await run_in_threadpool(
        _run, sessions, service.update_member, access.course_id, user_id, body
    )
    return out


@router.delete(
    "/{course_id}/members/{user_id}",
    response_model=MemberOut,
    responses=error_responses(
        {**MEMBER_ERRORS, 409: "Would leave the course without an active instructor"}
    ),
)
async def remove_member(
    user_id: UserId, access: CourseInstructor, sessions: SessionsDep
) -> MemberOut:
    """Instructors: status ``removed``; their submissions and grades are kept."""
    change = MemberUpdate(status="removed")
    out: MemberOut = await run_in_threadpool(
        _run, sessions, service.update_member, access.course_id, user_id, change
    )
    return out


@router.post(
    "/{course_id}/members/{user_id}/reset-link",
    status_code=201,
    response_model=ResetLink,
    responses=error_responses(
        {
            **MEMBER_ERRORS,
            403: "Not an active student, or an account that is not this course's to set up "
            "(made elsewhere, in another course, or already used): an administrator's",
        }
    ),
)
async def reset_link(
    request: Request, user_id: UserId, access: CourseInstructor, sessions: SessionsDep
) -> ResetLink:
    """Instructors: the first one-use link to set a password, for a student whose account this
    course's enrolment made and nobody has used yet (the roster's new people). Any other
    account's password is its owner's or an administrator's (docs/security.md, Tenancy)."""
    secret, expires_at = await run_in_threadpool(
        _run, sessions, service.reset_link_for, access, user_id
    )
    path = f"/reset/{secret}"
    return ResetLink(path=path, url=str(request.base_url).rstrip("/") + path, expires_at=expires_at)


# -- CSV upload --------------------------------------------------------------------------------

_ROSTER_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    # The parser takes one field (``_read_roster``): any other is a 400.
                    "additionalProperties": False,
                }
            },
        },
    }
}


async def _read_roster(request: Request, max_bytes: int) -> bytes:
    cap = roster_cap(max_bytes)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind in ("text/csv", "text/plain", "application/csv"):
        return await read_capped(request, cap)
    if kind != "multipart/form-data":
        raise ApiError(
            415, "unsupported_media_type", "send the file as text/csv or multipart/form-data"
        )
    declared = declared_length(request.headers)
    if declared is None:
        # The multipart parser spools files as they stream in: only a declared length lets the
        # cap apply before anything is read.
        raise ApiError(411, "length_required", "send a Content-Length with uploads", "body")
    if declared > max_bytes:
        raise cap.error()
    try:
        form = await request.form(max_files=1, max_fields=1, max_part_size=max_bytes)
    except ApiError:
        raise
    except Exception as exc:  # a malformed multipart body is the client's fault, never a 500
        raise ApiError(400, "invalid_upload", f"unreadable multipart body: {exc}") from None
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise ApiError(422, "invalid_roster", "attach the CSV as the form field 'file'", "file")
    data = await upload.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise cap.error()
    return data


def _import(
    sessions: sessionmaker[Session],
    course_id: int,
    data: bytes,
    max_rows: int,
    invitations: roster.Invitations | None,
) -> RosterResult:
    parsed = roster.parse(roster.decode(data), max_rows)
    with sessions() as session:
        return roster.apply(session, course_id, parsed, invitations)


@router.post(
    "/{course_id}/roster",
    response_model=RosterResult,
    openapi_extra=_ROSTER_BODY,
    responses={
        **error_responses(
            {
                **COURSE_ERRORS,
                400: "Unreadable multipart body",
                409: "The roster changed while importing",
                411: "Multipart upload without Content-Length",
                413: "File over GRADER_ROSTER_MAX_BYTES",
                415: "Neither text/csv nor multipart",
            }
        ),
        422: {
            "model": RosterErrorResponse,
            "description": "Invalid file or rows; `rows` lists each failing row. Nothing imported.",
        },
    },
)
async def upload_roster(
    request: Request,
    access: CourseInstructor,
    sessions: SessionsDep,
    settings: SettingsDep,
    invite: Annotated[
        bool,
        Query(
            description="Mail an invitation to each person the file enrols (in the same "
            "transaction): a link to choose a password when the course made their account, "
            "else a pointer to sign in."
        ),
    ] = True,
) -> RosterResult:
    """Instructors: enrol or update everyone in a CSV (``email,name[,section][,role]``), all or
    nothing; by default the people it enrols are invited by mail."""
    data = await _read_roster(request, settings.roster_max_bytes)
    send: roster.RosterInvite | None = getattr(request.app.state, "roster_invite", None)
    invitations = (
        roster.Invitations(send, access, site_url(request, settings))
        if invite and send is not None
        else None
    )
    result: RosterResult = await run_in_threadpool(
        _import, sessions, access.course_id, data, settings.roster_max_rows, invitations
    )
    return result
