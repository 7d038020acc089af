"""Gradebook API: a student's own scores; for staff the table, one student's record, manual
adjustments and their audit log, class insight, CSV exports; for instructors a bulk regrade.

Who: ``CourseMember`` (anyone in the course: their own scores only), ``CourseStaff`` (TAs and
instructors of the course, admins) and ``CourseInstructor`` (instructors, admins). Everything
else in a course is invisible to outsiders (404, as for a course that does not exist).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.core.bodies import BodyCap, read_model
from app.core.errors import error_responses
from app.courses.deps import CourseInstructor, CourseMember, CourseStaff
from app.gradebook.deps import GradebookServiceDep
from app.gradebook.regrade import regrade_all
from app.gradebook.schemas import (
    AdjustmentIn,
    AdjustmentLog,
    AdjustmentOut,
    FeedbackIn,
    FeedbackOut,
    GradebookOut,
    HintIn,
    HintList,
    HintOut,
    InsightOut,
    MyGrades,
    RegradeOut,
    StatisticsOut,
    StudentDetail,
)
from app.gradebook.statistics import statistics_csv as render_statistics_csv
from app.submissions.deps import SubmissionServiceDep

PREFIX = "/api/courses/{course_id}/assignments/{assignment_id}"
router = APIRouter(prefix=PREFIX, tags=["gradebook"])

AssignmentId = Annotated[int, Path(ge=1, le=2**53, description="The assignment's id.")]
Section = Annotated[
    str | None, Query(max_length=64, description="Only the students of this section.")
]
ADJUSTMENT_BODY_BYTES = 16 * 1024
# A comment of FEEDBACK_MAX_CHARS characters, each up to 4 bytes in UTF-8 and escaped in JSON.
FEEDBACK_BODY_BYTES = 64 * 1024

_READ_ERRORS = error_responses({404: "Unknown course or assignment"})
_CSV: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "CSV"}
}


def _csv(text: str, filename: str) -> Response:
    return Response(
        content=text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/grades/me", response_model=MyGrades, responses=_READ_ERRORS)
async def my_grades(
    access: CourseMember, assignment_id: AssignmentId, service: GradebookServiceDep
) -> MyGrades:
    """The caller's own scores. ``points``, ``rule`` and ``total`` are null while the
    assignment hides scores from students and has not published them."""
    return await run_in_threadpool(
        service.my_grades, access.course_id, assignment_id, access.principal
    )


@router.get("/gradebook", response_model=GradebookOut, responses=_READ_ERRORS)
async def gradebook(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    section: Section = None,
) -> GradebookOut:
    """Every student × every problem: points in force and the rule that decided them,
    attempts, the last verdict and the latest diagnosis; totals."""
    return await run_in_threadpool(
        service.gradebook, access.course_id, assignment_id, section, access.principal
    )


@router.get("/gradebook.csv", response_class=Response, responses={**_CSV, **_READ_ERRORS})
async def gradebook_csv(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    section: Section = None,
) -> Response:
    """One row per student: name, email, section, status, one column per problem, total."""
    text = await run_in_threadpool(service.gradebook_csv, access.course_id, assignment_id, section)
    return _csv(text, f"assignment-{assignment_id}-gradebook.csv")


@router.get("/attempts.csv", response_class=Response, responses={**_CSV, **_READ_ERRORS})
async def attempts_csv(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    section: Section = None,
) -> Response:
    """One row per graded attempt: the grader's score, the credit the policy gave it, the
    points and the rule."""
    text = await run_in_threadpool(service.attempts_csv, access.course_id, assignment_id, section)
    return _csv(text, f"assignment-{assignment_id}-attempts.csv")


@router.get("/canvas.csv", response_class=Response, responses={**_CSV, **_READ_ERRORS})
async def canvas_csv(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    section: Section = None,
    canvas_assignment_id: Annotated[
        int | None,
        Query(ge=1, le=2**53, description="The Canvas assignment to update (its id in Canvas)."),
    ] = None,
) -> Response:
    """Canvas's gradebook import layout (see docs/courses.md for what maps to what)."""
    text = await run_in_threadpool(
        service.canvas_csv, access.course_id, assignment_id, section, canvas_assignment_id
    )
    return _csv(text, f"assignment-{assignment_id}-canvas.csv")


@router.get(
    "/students/{user_id}",
    response_model=StudentDetail,
    responses=error_responses({404: "Unknown course, assignment or student"}),
)
async def student_record(
    access: CourseStaff,
    assignment_id: AssignmentId,
    user_id: Annotated[int, Path(ge=1, le=2**53, description="The student's account id.")],
    service: GradebookServiceDep,
) -> StudentDetail:
    """One student's every submission of the assignment (code, report, timestamps, attempt,
    credit) and their adjustments."""
    return await run_in_threadpool(
        service.student, access.course_id, assignment_id, user_id, access.principal
    )


@router.get("/adjustments", response_model=AdjustmentLog, responses=_READ_ERRORS)
async def adjustment_log(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    user_id: Annotated[int | None, Query(ge=1, le=2**53, description="One student's.")] = None,
) -> AdjustmentLog:
    """The audit log of manual scores, oldest first: who, when, old, new, why."""
    return await run_in_threadpool(service.adjustments, access.course_id, assignment_id, user_id)


def _adjustment_cap() -> BodyCap:
    return BodyCap(
        ADJUSTMENT_BODY_BYTES, "body_too_large", f"the limit is {ADJUSTMENT_BODY_BYTES} bytes"
    )


@router.post(
    "/adjustments",
    status_code=201,
    response_model=AdjustmentOut,
    responses=error_responses(
        {
            400: "Body is not JSON",
            404: "Unknown course or assignment; not a student of the course; not a problem of "
            "the assignment",
            409: "Score over the problem's points; clearing a score that has no adjustment",
            413: "Body over the size limit",
            422: "Invalid body (missing field, negative score, blank comment...)",
        }
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": AdjustmentIn.model_json_schema()}},
        }
    },
)
async def adjust(
    request: Request,
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
) -> AdjustmentOut:
    """Set a student's points on a problem by hand (``score`` null: back to the computed
    score), with a comment; the audit log keeps the score it replaced."""
    body = await read_model(request, _adjustment_cap(), AdjustmentIn)
    return await run_in_threadpool(
        service.adjust, access.course_id, assignment_id, body, access.principal
    )


def _feedback_cap() -> BodyCap:
    return BodyCap(
        FEEDBACK_BODY_BYTES, "body_too_large", f"the limit is {FEEDBACK_BODY_BYTES} bytes"
    )


@router.post(
    "/feedback",
    status_code=201,
    response_model=FeedbackOut,
    responses=error_responses(
        {
            400: "Body is not JSON",
            404: "Unknown course or assignment; not a student of the course; not a problem of "
            "the assignment; not a submission of the student's problem here",
            413: "Body over the size limit",
            422: "Invalid body (unknown kind, text over the limit...)",
        }
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": FeedbackIn.model_json_schema()}},
        }
    },
)
async def write_feedback(
    request: Request,
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
) -> FeedbackOut:
    """Set a student's comment (``kind`` "comment": they read it, with its author and time) or
    staff note ("note": never shown to the student) on a problem or one submission; it
    replaces the one in force, an empty body clears it."""
    body = await read_model(request, _feedback_cap(), FeedbackIn)
    return await run_in_threadpool(
        service.write_feedback, access.course_id, assignment_id, body, access.principal
    )


@router.get("/hints", response_model=HintList, responses=_READ_ERRORS)
async def hints(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    reaches: Annotated[
        bool, Query(description="Also how many students each reaches now (reads the gradebook).")
    ] = False,
) -> HintList:
    """The course's texts per diagnosis on the assignment's problems."""
    return await run_in_threadpool(
        service.hints, access.course_id, assignment_id, access.principal, reaches
    )


@router.put(
    "/hints",
    response_model=HintOut,
    responses=error_responses(
        {
            400: "Body is not JSON",
            404: "Unknown course or assignment; not a problem of the assignment",
            413: "Body over the size limit",
            422: "Invalid body",
        }
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": HintIn.model_json_schema()}},
        }
    },
)
async def put_hint(
    request: Request,
    access: CourseInstructor,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
) -> HintOut:
    """Write the course's text for one diagnosis of a problem (empty: withdraw it). Every
    student of the course whose latest graded attempt on the problem has the diagnosis reads
    it on their grades, now and after later submissions, until their latest attempt no longer
    has it."""
    body = await read_model(request, _feedback_cap(), HintIn)
    return await run_in_threadpool(
        service.put_hint, access.course_id, assignment_id, body, access.principal
    )


@router.get("/statistics", response_model=StatisticsOut, responses=_READ_ERRORS)
async def statistics(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    section: Section = None,
) -> StatisticsOut:
    """Per problem: the score histogram, attempts and hours until accepted, pass rates per
    test case (hidden ones by index only) and per requirement, the most common diagnoses and
    pairs of them, and the diagnoses of the last seven days against the seven before."""
    return await run_in_threadpool(
        service.statistics, access.course_id, assignment_id, section, access.principal
    )


@router.get("/statistics.csv", response_class=Response, responses={**_CSV, **_READ_ERRORS})
async def statistics_csv(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    section: Section = None,
) -> Response:
    """The statistics in long form: problem_id, measure, key, value, total."""
    out = await run_in_threadpool(
        service.statistics, access.course_id, assignment_id, section, access.principal
    )
    return _csv(render_statistics_csv(out), f"assignment-{assignment_id}-statistics.csv")


@router.get("/insight", response_model=InsightOut, responses=_READ_ERRORS)
async def insight(
    access: CourseStaff,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    section: Section = None,
) -> InsightOut:
    """Per problem: the most common diagnoses of the students' latest graded attempts and how
    many students are stuck on each."""
    return await run_in_threadpool(
        service.insight, access.course_id, assignment_id, section, access.principal
    )


@router.post(
    "/regrade",
    status_code=202,
    response_model=RegradeOut,
    responses=error_responses({404: "Unknown course or assignment"}),
)
async def regrade(
    access: CourseInstructor,
    assignment_id: AssignmentId,
    service: GradebookServiceDep,
    submissions: SubmissionServiceDep,
) -> RegradeOut:
    """Grade every graded attempt of the assignment again (after its test cases changed).
    Scores are computed when read, so they follow the new gradings under the policy."""
    return await run_in_threadpool(
        regrade_all, service, submissions, access.course_id, assignment_id
    )
