"""Typed dependency: the submissions service, built per request on what the lifespan opened.
Each is ``async def``: see app.core.deps."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.submissions.service import SubmissionService


async def get_submission_service(request: Request) -> SubmissionService:
    """Read from ``app.state`` in one dependency, not one per part: every submission request
    solves it, and each dependency FastAPI solves costs more than the reads it makes."""
    state = request.app.state
    return SubmissionService(
        state.settings,
        state.sessions,
        state.dispatcher,
        getattr(state, "submission_view", None),
    )


SubmissionServiceDep = Annotated[SubmissionService, Depends(get_submission_service)]
