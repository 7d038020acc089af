"""The gradebook's pages: HTML shells whose scripts read the gradebook API, which decides who
may see what (a shell holds nothing but the ids in its URL)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse

from app.web.routes import page

router = APIRouter(include_in_schema=False)

Id = Annotated[int, Path(ge=1, le=2**53)]


@router.get("/courses/{course_id}/assignments/{assignment_id}/gradebook")
def gradebook_page(course_id: Id, assignment_id: Id) -> HTMLResponse:
    return page(
        "Gradebook",
        "gradebook",
        {"course-id": str(course_id), "assignment-id": str(assignment_id)},
    )


@router.get("/courses/{course_id}/assignments/{assignment_id}/students/{user_id}")
def student_page(course_id: Id, assignment_id: Id, user_id: Id) -> HTMLResponse:
    return page(
        "Student record",
        "gradebook-student",
        {"course-id": str(course_id), "assignment-id": str(assignment_id), "user-id": str(user_id)},
    )
