"""The courses pages: ``/courses``, ``/courses/{course_id}/roster`` and ``/join/{code}``.

Shells like every page (app.web.routes.page); their scripts read the courses API, which decides
who sees what. ``/join/{code}`` names the course in the page itself, so someone who has not
signed in yet sees what they are about to join.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.core.deps import SessionsDep
from app.courses.models import Course
from app.courses.service import normalize_code
from app.web.routes import page

router = APIRouter(include_in_schema=False)


@router.get("/courses", response_class=HTMLResponse)
def courses_page() -> HTMLResponse:
    return page("Courses", "courses")


@router.get("/courses/{course_id}/roster", response_class=HTMLResponse)
def roster_page(course_id: Annotated[int, Path(ge=1, le=2**53)]) -> HTMLResponse:
    return page("Roster", "roster", {"course-id": str(course_id)})


def _open_course_title(sessions: sessionmaker[Session], code: str) -> str | None:
    with sessions() as session:
        course = session.scalars(
            select(Course).where(Course.join_code == code, Course.archived_at.is_(None))
        ).first()
        return None if course is None else course.title


@router.get("/join/{code}", response_class=HTMLResponse)
async def join_page(
    code: Annotated[str, Path(max_length=64)], sessions: SessionsDep
) -> HTMLResponse:
    code = normalize_code(code)
    title = await run_in_threadpool(_open_course_title, sessions, code)
    if title is None:
        return page("Join a course", "join", {"join-code": code, "missing": "1"}, status_code=404)
    return page(f"Join {title}", "join", {"join-code": code, "course-title": title})
