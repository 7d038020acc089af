"""The assignment pages: a course's home, an assignment, and a problem page in an assignment's
context (the problem page's own script, told the course and the assignment). Shells only: the
scripts read the API, which decides what the caller may see."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse

from app.problems.deps import ProblemsDep
from app.web.routes import page

router = APIRouter(include_in_schema=False)

Id = Annotated[int, Path(ge=1, le=2**53)]


@router.get("/courses/{course_id}", response_class=HTMLResponse)
def course_page(course_id: Id) -> HTMLResponse:
    return page("Course", "course", {"course-id": str(course_id)})


@router.get("/courses/{course_id}/assignments/{assignment_id}", response_class=HTMLResponse)
def assignment_page(course_id: Id, assignment_id: Id) -> HTMLResponse:
    return page(
        "Assignment",
        "assignment",
        {"course-id": str(course_id), "assignment-id": str(assignment_id)},
    )


@router.get(
    "/courses/{course_id}/assignments/{assignment_id}/problems/{problem_id}",
    response_class=HTMLResponse,
)
def assignment_problem_page(
    course_id: Id, assignment_id: Id, problem_id: str, problems: ProblemsDep
) -> HTMLResponse:
    problem = problems.get(problem_id)
    if problem is None:
        return page("Not found", "index", {"missing-problem": problem_id}, status_code=404)
    return page(
        problem.spec.title,
        "problem",
        {
            "problem-id": problem.spec.id,
            "course-id": str(course_id),
            "assignment-id": str(assignment_id),
        },
    )
