"""The similarity report's page: an HTML shell whose script reads the similarity API, which
decides who may see what (the shell holds nothing but the ids in its URL)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse

from app.web.routes import page

router = APIRouter(include_in_schema=False)

Id = Annotated[int, Path(ge=1, le=2**53)]


@router.get("/courses/{course_id}/assignments/{assignment_id}/problems/{problem_id}/similarity")
def similarity_page(
    course_id: Id, assignment_id: Id, problem_id: Annotated[str, Path(max_length=128)]
) -> HTMLResponse:
    return page(
        "Similarity report",
        "similarity",
        {
            "course-id": str(course_id),
            "assignment-id": str(assignment_id),
            "problem-id": problem_id,
        },
    )
