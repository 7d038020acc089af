"""Typed dependencies: the loaded problems, and one problem by its path id (404 if unknown).
Each is ``async def``: see app.core.deps."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.core.errors import ApiError
from app.problems.loader import Problem


async def get_problems(request: Request) -> dict[str, Problem]:
    problems: dict[str, Problem] = request.app.state.problems
    return problems


ProblemsDep = Annotated[dict[str, Problem], Depends(get_problems)]


async def get_problem(problem_id: str, request: Request) -> Problem:
    # ``app.state`` read here, not through ``ProblemsDep``: one dependency less to solve on
    # every submission.
    problems: dict[str, Problem] = request.app.state.problems
    problem = problems.get(problem_id)
    if problem is None:
        raise ApiError(404, "problem_not_found", f"no problem with id {problem_id!r}", "problem_id")
    return problem


ProblemDep = Annotated[Problem, Depends(get_problem)]
