"""Typed dependencies shared by the routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.core.config import Settings
from app.core.errors import ApiError
from app.problems.loader import Problem


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_problems(request: Request) -> dict[str, Problem]:
    problems: dict[str, Problem] = request.app.state.problems
    return problems


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
ProblemsDep = Annotated[dict[str, Problem], Depends(get_problems)]


def get_problem(problem_id: str, problems: ProblemsDep) -> Problem:
    problem = problems.get(problem_id)
    if problem is None:
        raise ApiError(404, "problem_not_found", f"no problem with id {problem_id!r}", "problem_id")
    return problem


ProblemDep = Annotated[Problem, Depends(get_problem)]
