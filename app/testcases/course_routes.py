"""A course's own test cases: ``/api/courses/{course_id}/problems/{problem_id}/test-cases``.

A course's cases grade only the submissions in that course's assignments (with the catalog's),
never practice nor another course's. Its staff (TAs, instructors; admins) list and read them,
its instructors add and remove them; to anyone outside the course the course does not exist
(404), and another course's case id is not found here. Validation, size limits and output are
the catalog routes' (``routes``), so a case is checked against the reference the same way.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from app.core.errors import error_responses
from app.courses.deps import CourseInstructor, CourseStaff
from app.problems.deps import ProblemDep
from app.testcases.routes import (
    REQUEST_BODY,
    CaseId,
    ServiceDep,
    add_errors,
    case_detail,
    case_not_found,
    create_case,
    remove_case,
    stored_out,
)
from app.testcases.schemas import CaseCreated, CaseDeleted, CaseDetail, CaseList

router = APIRouter(
    prefix="/api/courses/{course_id}/problems/{problem_id}/test-cases", tags=["instructors"]
)


@router.post(
    "",
    status_code=201,
    response_model=CaseCreated,
    openapi_extra=REQUEST_BODY,
    responses=add_errors("the course's, the catalog's, built-in or probe"),
)
async def add_course_case(
    access: CourseInstructor,
    problem: ProblemDep,
    request: Request,
    response: Response,
    service: ServiceDep,
) -> CaseCreated:
    """Validate a case as the catalog's are, then store it as the course's own: from then on it
    grades the course's assignments on this problem (bumps the problem's test-set version)."""
    created = await create_case(request, problem, service, access.principal.name, access.course_id)
    response.headers["Location"] = (
        f"/api/courses/{access.course_id}/problems/{problem.id}/test-cases/{created.id}"
    )
    return created


@router.get("", response_model=CaseList, responses=error_responses({404: "Unknown problem"}))
async def list_course_cases(
    access: CourseStaff, problem: ProblemDep, service: ServiceDep
) -> CaseList:
    """The course's own live cases for the problem (the catalog's are listed by the catalog's
    route); its submissions run them after the built-in and the catalog's."""
    version, rows = await run_in_threadpool(service.live, problem, access.course_id)
    cases = [stored_out(problem, r, instructor=True) for r in rows]
    return CaseList(
        problem_id=problem.id, course_id=access.course_id, test_set_version=version, cases=cases
    )


@router.get(
    "/{course_case_id}",
    response_model=CaseDetail,
    responses=error_responses({404: "Unknown problem, or no such case of this course"}),
)
async def get_course_case(
    access: CourseStaff, problem: ProblemDep, course_case_id: CaseId, service: ServiceDep
) -> CaseDetail:
    """One of the course's cases with its arrays and the reference's output."""
    row = await run_in_threadpool(service.get, problem, course_case_id, access.course_id)
    if row is None:
        raise case_not_found(course_case_id, "course_case_id")
    return case_detail(problem, row, staff=True)


@router.delete(
    "/{course_case_id}",
    response_model=CaseDeleted,
    responses=error_responses({404: "Unknown problem, or no such case of this course"}),
)
async def delete_course_case(
    access: CourseInstructor, problem: ProblemDep, course_case_id: CaseId, service: ServiceDep
) -> CaseDeleted:
    """Remove one of the course's cases (bumps the test-set version)."""
    return await remove_case(problem, course_case_id, service, access.course_id, "course_case_id")
