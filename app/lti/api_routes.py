"""The LTI API: admins register platforms, read the tool's values and rotate its keys; admins
and a course's staff see the score outbox; staff sync a course's roster from the LMS;
instructors send a web-made assignment's scores to an LMS gradebook column."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.assignments.routes import AssignmentId
from app.auth.deps import Admin
from app.auth.http import read_json
from app.core.bodies import json_body_schema
from app.core.deps import SessionsDep, SettingsDep, site_url
from app.core.errors import error_responses
from app.courses.deps import CourseInstructor, CourseStaff
from app.lti.gradelink import link_assignment, link_state, list_line_items
from app.lti.keys import rotate
from app.lti.models import LtiContext, LtiLineItem, LtiScoreSend
from app.lti.pending_members import pending_members
from app.lti.registry import (
    add_platform,
    get_platform,
    list_platforms,
    platform_out,
    set_trust,
    tool_config,
)
from app.lti.roster import sync_course
from app.lti.schemas import (
    KeyOut,
    LineItemLink,
    LineItemLinkOut,
    LineItemState,
    LmsLineItem,
    OutboxItem,
    OutboxOut,
    PendingMemberOut,
    PlatformIn,
    PlatformOut,
    PlatformPatch,
    RosterSyncOut,
    ToolConfig,
)

router = APIRouter(tags=["lti"])

_BODY_ERRORS = {
    400: "The body is not JSON",
    413: "The body is over its cap",
    415: "The body is not application/json",
    422: "A field is invalid",
}
PlatformId = Annotated[int, Path(ge=1, le=2**53, description="The platform's id.")]
Status = Literal["pending", "held", "sent", "failed"]


@router.get("/api/lti/tool", response_model=ToolConfig, responses=error_responses({}))
async def lti_tool(request: Request, admin: Admin, settings: SettingsDep) -> ToolConfig:
    """What to paste into the LMS's registration of TensorJudge. Administrators only."""
    return tool_config(site_url(request, settings))


def _list(sessions: sessionmaker[Session]) -> list[PlatformOut]:
    with sessions() as session:
        return list_platforms(session)


@router.get("/api/lti/platforms", response_model=list[PlatformOut], responses=error_responses({}))
async def lti_platforms(admin: Admin, sessions: SessionsDep) -> list[PlatformOut]:
    """The registered LMSs. Administrators only."""
    return await run_in_threadpool(_list, sessions)


def _add(sessions: sessionmaker[Session], body: PlatformIn) -> PlatformOut:
    with sessions() as session:
        return add_platform(session, body)


@router.post(
    "/api/lti/platforms",
    status_code=201,
    response_model=PlatformOut,
    openapi_extra=json_body_schema(PlatformIn),
    responses=error_responses({**_BODY_ERRORS, 409: "Issuer and client id already registered"}),
)
async def lti_add_platform(request: Request, admin: Admin, sessions: SessionsDep) -> PlatformOut:
    """Register an LMS. Administrators only."""
    body = await read_json(request, PlatformIn)
    return await run_in_threadpool(_add, sessions, body)


def _get(sessions: sessionmaker[Session], platform_id: int) -> PlatformOut:
    with sessions() as session:
        return platform_out(session, get_platform(session, platform_id))


@router.get(
    "/api/lti/platforms/{platform_id}",
    response_model=PlatformOut,
    responses=error_responses({404: "No such platform"}),
)
async def lti_platform(platform_id: PlatformId, admin: Admin, sessions: SessionsDep) -> PlatformOut:
    """One registered LMS. Administrators only."""
    return await run_in_threadpool(_get, sessions, platform_id)


def _patch(sessions: sessionmaker[Session], platform_id: int, body: PlatformPatch) -> PlatformOut:
    with sessions() as session:
        return set_trust(session, platform_id, body)


@router.patch(
    "/api/lti/platforms/{platform_id}",
    response_model=PlatformOut,
    openapi_extra=json_body_schema(PlatformPatch),
    responses=error_responses({**_BODY_ERRORS, 404: "No such platform"}),
)
async def lti_patch_platform(
    platform_id: PlatformId, request: Request, admin: Admin, sessions: SessionsDep
) -> PlatformOut:
    """Trust (or stop trusting) the platform's emails to match existing accounts.
    Administrators only."""
    body = await read_json(request, PlatformPatch)
    return await run_in_threadpool(_patch, sessions, platform_id, body)


def _rotate(sessions: sessionmaker[Session]) -> KeyOut:
    with sessions() as session:
        kid = rotate(session)
        session.commit()
        return KeyOut(kid=kid)


@router.post("/api/lti/keys/rotate", response_model=KeyOut, responses=error_responses({}))
async def lti_rotate_keys(admin: Admin, sessions: SessionsDep) -> KeyOut:
    """A new signing key; the old one stays published a day. Administrators only."""
    return await run_in_threadpool(_rotate, sessions)


def outbox(
    sessions: sessionmaker[Session], course_id: int | None, status: str | None, limit: int
) -> OutboxOut:
    """Counts per status and the newest rows (of one course's assignments)."""
    s, li, ctx = LtiScoreSend, LtiLineItem, LtiContext
    base = select(s, li.assignment_id, ctx.course_id).join(li, li.id == s.line_item_id)
    base = base.join(ctx, ctx.id == li.context_id)
    counts_q = (
        select(s.status, func.count())
        .join(li, li.id == s.line_item_id)
        .join(ctx, ctx.id == li.context_id)
    )
    if course_id is not None:
        base = base.where(ctx.course_id == course_id)
        counts_q = counts_q.where(ctx.course_id == course_id)
    if status is not None:
        base = base.where(s.status == status)
    with sessions() as session:
        counts = {k: int(v) for k, v in session.execute(counts_q.group_by(s.status))}
        items = [
            OutboxItem(
                id=row.id,
                course_id=course,
                assignment_id=assignment,
                user_id=row.user_id,
                status=row.status,
                attempts=row.attempts,
                next_attempt_at=row.next_attempt_at,
                last_error=row.last_error,
                score_given=row.score_given,
                created_at=row.created_at,
                sent_at=row.sent_at,
            )
            for row, assignment, course in session.execute(base.order_by(s.id.desc()).limit(limit))
        ]
    return OutboxOut(counts=counts, items=items)


Limit = Annotated[int, Query(ge=1, le=1000)]


@router.get("/api/lti/scores", response_model=OutboxOut, responses=error_responses({}))
async def lti_scores(
    admin: Admin, sessions: SessionsDep, status: Status | None = None, limit: Limit = 100
) -> OutboxOut:
    """Scores waiting to go to the LMSs, held, sent or failed. Administrators only."""
    return await run_in_threadpool(outbox, sessions, None, status, limit)


@router.get(
    "/api/courses/{course_id}/lti/scores", response_model=OutboxOut, responses=error_responses({})
)
async def lti_course_scores(
    access: CourseStaff, sessions: SessionsDep, status: Status | None = None, limit: Limit = 100
) -> OutboxOut:
    """This course's scores on their way to the LMS. The course's staff."""
    return await run_in_threadpool(outbox, sessions, access.course_id, status, limit)


@router.post(
    "/api/courses/{course_id}/lti/roster-sync",
    response_model=RosterSyncOut,
    responses=error_responses(
        {409: "No LMS course with a roster is linked here", 502: "The LMS did not answer"}
    ),
)
async def lti_roster_sync(access: CourseStaff, sessions: SessionsDep) -> RosterSyncOut:
    """Enrolls the LMS course's members now (Names and Role Provisioning). The course's staff."""
    return await run_in_threadpool(sync_course, sessions, access.course_id)


def _pending(sessions: sessionmaker[Session], course_id: int) -> list[PendingMemberOut]:
    with sessions() as session:
        return pending_members(session, course_id)


@router.get(
    "/api/courses/{course_id}/lti/pending-members",
    response_model=list[PendingMemberOut],
    responses=error_responses({}),
)
async def lti_pending_members(access: CourseStaff, sessions: SessionsDep) -> list[PendingMemberOut]:
    """The course's members an LMS roster names who will be linked on their first launch (on
    a platform not trusted for email, no second account is made for them). The course's
    staff."""
    return await run_in_threadpool(_pending, sessions, access.course_id)


@router.get(
    "/api/courses/{course_id}/lti/line-items",
    response_model=list[LmsLineItem],
    responses=error_responses(
        {409: "An LMS course offers no gradebook service", 502: "The LMS did not answer"}
    ),
)
async def lti_line_items(access: CourseInstructor, sessions: SessionsDep) -> list[LmsLineItem]:
    """The gradebook columns of the LMS courses linked here, to link an assignment to. The
    course's instructors."""
    return await run_in_threadpool(list_line_items, sessions, access.course_id)


@router.get(
    "/api/courses/{course_id}/assignments/{assignment_id}/lti/line-item",
    response_model=LineItemState,
    responses=error_responses({404: "No such assignment here"}),
)
async def lti_line_item(
    assignment_id: AssignmentId, access: CourseInstructor, sessions: SessionsDep
) -> LineItemState:
    """Where this assignment's scores go: the LMS courses linked to the course and the
    assignment's gradebook column in each (the LMS is not asked). The course's instructors."""
    return await run_in_threadpool(link_state, sessions, access.course_id, assignment_id)


@router.put(
    "/api/courses/{course_id}/assignments/{assignment_id}/lti/line-item",
    response_model=LineItemLinkOut,
    openapi_extra=json_body_schema(LineItemLink),
    responses=error_responses(
        {
            **_BODY_ERRORS,
            404: "No such assignment or LMS course here",
            409: "No (or several) LMS courses linked, no AGS, or the line item is taken",
            502: "The LMS did not answer",
        }
    ),
)
async def lti_link_line_item(
    assignment_id: AssignmentId, request: Request, access: CourseInstructor, sessions: SessionsDep
) -> LineItemLinkOut:
    """Send this assignment's scores to an LMS gradebook column: one picked from the line
    items list, or (no line_item_url) one made on the first score. The current scores of
    students already graded are sent too. The course's instructors."""
    body = await read_json(request, LineItemLink)
    return await run_in_threadpool(link_assignment, sessions, access.course_id, assignment_id, body)
