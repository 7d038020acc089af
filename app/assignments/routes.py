"""Assignments API: the assignments of a course, their overrides and publication, submitting in
one, and a student's own history as CSV.

Who may do what: course members read (students only released assignments, and only their own
dates and submissions); instructors (and admins) create, change, delete and publish; staff (TAs
too) grant and remove overrides, since granting an extension is grading work, not a course
setting. Staff may submit in an assignment as practice that never counts.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, TypeVar

from fastapi import APIRouter, Path, Request, Response
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.assignments import history
from app.assignments.admission import admission
from app.assignments.models import Assignment, Override
from app.assignments.notices import overrides_granted, scores_published
from app.assignments.schemas import (
    AssignmentFields,
    AssignmentOut,
    AssignmentPatch,
    Attempts,
    OverrideCreate,
    OverrideOut,
    PublishBody,
)
from app.assignments.service import (
    add_overrides,
    assignment_out,
    fields_of,
    get_assignment,
    list_assignments,
    list_overrides,
    merged,
    override_out,
    problem_attempts,
    problems_of,
    publish,
    store,
    validate,
)
from app.core.arrival import received_at
from app.core.bodies import BodyCap, json_body_schema, read_model
from app.core.deps import SessionsDep, SettingsDep, site_url
from app.core.errors import ApiError, error_responses, first_error
from app.courses.deps import (
    CourseAccess,
    CourseCallerDep,
    CourseInstructor,
    CourseMember,
    CourseStaff,
)
from app.db.base import utcnow
from app.problems.deps import ProblemsDep
from app.submissions.deps import SubmissionServiceDep
from app.submissions.routes import (
    _ERRORS as SUBMISSION_ERRORS,
)
from app.submissions.routes import (
    IdempotencyKey,
    Submitter,
    WaitQuery,
    accept_submission,
)
from app.submissions.schemas import SubmissionCreate, SubmissionOut

router = APIRouter(prefix="/api/courses/{course_id}/assignments", tags=["assignments"])

# An assignment with 200 problems, or an override for 2000 students, is a few tens of KiB.
BODY_CAP = BodyCap(256 * 1024, "body_too_large", "the limit is 256 KiB")

AssignmentId = Annotated[int, Path(ge=1, le=2**53, description="The assignment's id.")]
OverrideId = Annotated[int, Path(ge=1, le=2**53, description="The override's id.")]

Model = TypeVar("Model", bound=BaseModel)
T = TypeVar("T")

_READ = {404: "Unknown course or assignment (or not released yet)"}
_WRITE = {**_READ, 400: "Body is not JSON", 413: "Body over 256 KiB", 422: "Invalid body"}


async def _in_session(
    sessions: sessionmaker[Session], work: Callable[[Session], T], commit: bool = False
) -> T:
    def run() -> T:
        with sessions() as session:
            result = work(session)
            if commit:
                session.commit()
            return result

    return await run_in_threadpool(run)


# -- assignments --------------------------------------------------------------------------------


@router.get("", response_model=list[AssignmentOut], responses=error_responses(_READ))
async def list_course_assignments(
    access: CourseMember, sessions: SessionsDep, problems: ProblemsDep
) -> list[AssignmentOut]:
    """The course's assignments by due date; a student sees released ones, with their own
    due date and credit now."""

    def work(session: Session) -> list[AssignmentOut]:
        now = utcnow()
        return [
            assignment_out(session, a, problems, access, now)
            for a in list_assignments(session, access, now)
        ]

    return await _in_session(sessions, work)


@router.post(
    "",
    status_code=201,
    response_model=AssignmentOut,
    openapi_extra=json_body_schema(AssignmentFields),
    responses=error_responses(_WRITE),
)
async def create_assignment(
    request: Request,
    response: Response,
    access: CourseInstructor,
    sessions: SessionsDep,
    problems: ProblemsDep,
) -> AssignmentOut:
    body = await read_model(request, BODY_CAP, AssignmentFields)
    validate(body, problems)

    def work(session: Session) -> AssignmentOut:
        assignment = Assignment(course_id=access.course_id, created_at=utcnow())
        store(session, assignment, body)
        session.flush()
        return assignment_out(session, assignment, problems, access, utcnow())

    out = await _in_session(sessions, work, commit=True)
    response.headers["Location"] = f"/api/courses/{access.course_id}/assignments/{out.id}"
    return out


@router.get("/{assignment_id}", response_model=AssignmentOut, responses=error_responses(_READ))
async def read_assignment(
    assignment_id: AssignmentId, access: CourseMember, sessions: SessionsDep, problems: ProblemsDep
) -> AssignmentOut:
    def work(session: Session) -> AssignmentOut:
        now = utcnow()
        assignment = get_assignment(session, access, assignment_id, now)
        return assignment_out(session, assignment, problems, access, now)

    return await _in_session(sessions, work)


@router.patch(
    "/{assignment_id}",
    response_model=AssignmentOut,
    openapi_extra=json_body_schema(AssignmentPatch),
    responses=error_responses(_WRITE),
)
async def change_assignment(
    request: Request,
    assignment_id: AssignmentId,
    access: CourseInstructor,
    sessions: SessionsDep,
    problems: ProblemsDep,
) -> AssignmentOut:
    """Only the fields sent change; the whole assignment is validated as it will be."""
    patch = await read_model(request, BODY_CAP, AssignmentPatch)

    def work(session: Session) -> AssignmentOut:
        assignment = get_assignment(session, access, assignment_id)
        try:
            fields = merged(fields_of(session, assignment), patch)
        except ValidationError as exc:
            field, message = first_error(exc)
            raise ApiError(422, "invalid_request", message, field) from None
        validate(fields, problems)
        store(session, assignment, fields)
        session.flush()
        return assignment_out(session, assignment, problems, access, utcnow())

    return await _in_session(sessions, work, commit=True)


@router.delete("/{assignment_id}", status_code=204, responses=error_responses(_READ))
async def delete_assignment(
    assignment_id: AssignmentId, access: CourseInstructor, sessions: SessionsDep
) -> Response:
    """Its submissions stay, as practice (their assignment is cleared)."""

    def work(session: Session) -> None:
        session.delete(get_assignment(session, access, assignment_id))

    await _in_session(sessions, work, commit=True)
    return Response(status_code=204)


@router.post(
    "/{assignment_id}/publish",
    response_model=AssignmentOut,
    openapi_extra=json_body_schema(PublishBody),
    responses=error_responses(_WRITE),
)
async def publish_assignment(
    request: Request,
    assignment_id: AssignmentId,
    access: CourseInstructor,
    sessions: SessionsDep,
    problems: ProblemsDep,
    settings: SettingsDep,
) -> AssignmentOut:
    """From now on students see their full reports (``feedback``) and their scores
    (``scores``), whatever the feedback policy and ``hide_scores`` say."""
    body = await read_model(request, BODY_CAP, PublishBody)
    base = site_url(request, settings)

    def work(session: Session) -> AssignmentOut:
        assignment = get_assignment(session, access, assignment_id)
        now = utcnow()
        newly = body.scores and assignment.scores_published_at is None
        publish(assignment, body.feedback, body.scores, now)
        if newly:
            scores_published(session, base, assignment)
        session.flush()
        return assignment_out(session, assignment, problems, access, now)

    return await _in_session(sessions, work, commit=True)


# -- overrides ----------------------------------------------------------------------------------


@router.get(
    "/{assignment_id}/overrides",
    response_model=list[OverrideOut],
    responses=error_responses(_READ),
)
async def overrides(
    assignment_id: AssignmentId, access: CourseStaff, sessions: SessionsDep
) -> list[OverrideOut]:
    def work(session: Session) -> list[OverrideOut]:
        get_assignment(session, access, assignment_id)
        return [override_out(o) for o in list_overrides(session, assignment_id)]

    return await _in_session(sessions, work)


@router.post(
    "/{assignment_id}/overrides",
    status_code=201,
    response_model=list[OverrideOut],
    openapi_extra=json_body_schema(OverrideCreate),
    responses=error_responses(_WRITE),
)
async def grant_override(
    request: Request,
    assignment_id: AssignmentId,
    access: CourseStaff,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> list[OverrideOut]:
    """One override for ``user_id``, one each for ``user_ids`` (all or none), or one for a
    ``section``; 422 ``not_enrolled`` for anyone who is not an active student here."""
    body = await read_model(request, BODY_CAP, OverrideCreate)

    base = site_url(request, settings)

    def work(session: Session) -> list[OverrideOut]:
        assignment = get_assignment(session, access, assignment_id)
        rows = add_overrides(session, access, assignment, body)
        overrides_granted(session, base, assignment, rows)
        return [override_out(o) for o in rows]

    return await _in_session(sessions, work, commit=True)


@router.delete(
    "/{assignment_id}/overrides/{override_id}",
    status_code=204,
    responses=error_responses({**_READ, 404: "Unknown course, assignment or override"}),
)
async def remove_override(
    assignment_id: AssignmentId,
    override_id: OverrideId,
    access: CourseStaff,
    sessions: SessionsDep,
) -> Response:
    def work(session: Session) -> None:
        get_assignment(session, access, assignment_id)
        row = session.get(Override, override_id)
        if row is None or row.assignment_id != assignment_id:
            raise ApiError(404, "override_not_found", f"no override {override_id}", "override_id")
        session.delete(row)

    await _in_session(sessions, work, commit=True)
    return Response(status_code=204)


# -- submitting ---------------------------------------------------------------------------------


def _problem_in(
    session: Session, access: CourseAccess, assignment_id: int, problem_id: str, now: datetime
) -> Assignment:
    assignment = get_assignment(session, access, assignment_id, now)
    if problem_id not in {p.problem_id for p in problems_of(session, assignment_id)}:
        raise ApiError(
            404,
            "problem_not_in_assignment",
            f"problem {problem_id!r} is not in this assignment",
            "problem_id",
        )
    return assignment


@router.post(
    "/{assignment_id}/problems/{problem_id}/submissions",
    status_code=202,
    response_model=SubmissionOut,
    responses={
        200: {"model": SubmissionOut, "description": "Finished within ?wait"},
        **SUBMISSION_ERRORS,
        **error_responses(
            {
                404: "Unknown course, assignment (or not released yet) or problem",
                409: "Closed after the last deadline, attempts used up, code identical to an "
                "earlier graded attempt (without force), or Idempotency-Key "
                "reused with a different body",
                429: "Rate limited (the assignment's per-student limit, or the service's)",
            },
            retry_after=(429, 503),
        ),
    },
    openapi_extra=json_body_schema(SubmissionCreate),
)
async def submit_in_assignment(
    request: Request,
    response: Response,
    assignment_id: AssignmentId,
    problem_id: Annotated[str, Path(min_length=1, max_length=128)],
    caller: CourseCallerDep,
    service: SubmissionServiceDep,
    wait: WaitQuery = 0,
    idempotency_key: IdempotencyKey = None,
) -> SubmissionOut:
    """Submit as POST /api/problems/{id}/submissions does (same body, ``?wait``,
    ``Idempotency-Key`` and caps), as a graded attempt of the caller. ``mode: "examples"``
    never costs an attempt. After the last deadline it is refused (``after_close: closed``) or
    accepted as practice that earns nothing; staff submissions are practice too. The answer is
    the report as the feedback policy lets the caller see it."""
    arrived = received_at(request)

    # Course members only, as CourseMember; checked in the accepting thread call.
    def submitter(session: Session) -> Submitter:
        access = caller.access(session)
        assignment = _problem_in(session, access, assignment_id, problem_id, arrived)
        # Held until the answer: the session's identity map holds rows weakly, and the
        # admission and the answer read this one again.
        return Submitter(access.principal, admission(access, assignment_id, problem_id), assignment)

    return await accept_submission(
        request, response, problem_id, service, submitter, wait, idempotency_key
    )


@router.get(
    "/{assignment_id}/problems/{problem_id}/attempts",
    response_model=Attempts,
    responses=error_responses({**_READ, 404: "Unknown course, assignment or problem"}),
)
async def my_attempts(
    assignment_id: AssignmentId,
    problem_id: Annotated[str, Path(min_length=1, max_length=128)],
    access: CourseMember,
    sessions: SessionsDep,
) -> Attempts:
    """The caller's graded attempts used and allowed on one problem, their due date, the
    credit a submission earns now and the feedback they will see."""

    def work(session: Session) -> Attempts:
        now = utcnow()
        assignment = _problem_in(session, access, assignment_id, problem_id, now)
        return problem_attempts(session, assignment, access, problem_id, now)

    return await _in_session(sessions, work)


@router.get(
    "/{assignment_id}/submissions/me.csv",
    response_class=Response,
    responses={
        200: {"content": {"text/csv": {}}, "description": "One row per submission"},
        **error_responses(_READ),
    },
)
async def my_history_csv(
    assignment_id: AssignmentId, access: CourseMember, sessions: SessionsDep
) -> Response:
    """The caller's own submissions in this assignment: time, problem, mode, graded attempt,
    verdict, and the score and feedback only as the assignment's policy lets them be seen."""

    def work(session: Session) -> str:
        now = utcnow()
        assignment = get_assignment(session, access, assignment_id, now)
        return history.csv_of(session, assignment, access.principal, now, staff=access.is_staff)

    text = await _in_session(sessions, work)
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="assignment-{assignment_id}.csv"'},
    )
