"""Typed dependency: the gradebook service, built per request on what the lifespan opened."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.core.deps import SessionsDep
from app.gradebook.service import GradebookService
from app.problems.deps import ProblemsDep


def get_gradebook_service(sessions: SessionsDep, problems: ProblemsDep) -> GradebookService:
    titles = {problem_id: problem.spec.title for problem_id, problem in problems.items()}
    return GradebookService(sessions, titles)


GradebookServiceDep = Annotated[GradebookService, Depends(get_gradebook_service)]
