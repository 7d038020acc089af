"""Problems API: the list, and one problem's public material (statement, starter, examples)."""

from __future__ import annotations

from fastapi import APIRouter

from app.core.errors import error_responses
from app.problems.deps import ProblemDep, ProblemsDep
from app.problems.schemas import ProblemDetail, ProblemSummary, detail_out, summary_out

router = APIRouter(prefix="/api/problems", tags=["problems"])


@router.get("", response_model=list[ProblemSummary])
def list_problems(problems: ProblemsDep) -> list[ProblemSummary]:
    return [summary_out(p) for p in problems.values()]


@router.get(
    "/{problem_id}",
    response_model=ProblemDetail,
    responses=error_responses({404: "Unknown problem"}),
)
def get_problem(problem: ProblemDep) -> ProblemDetail:
    return detail_out(problem)
