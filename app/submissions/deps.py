"""Typed dependency: the submissions service, built per request on what the lifespan opened.
Each is ``async def``: see app.core.deps."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.core.deps import SessionsDep, SettingsDep
from app.submissions.service import Dispatcher, SubmissionService, SubmissionView


async def get_dispatcher(request: Request) -> Dispatcher:
    """The configured queue's dispatcher (the embedded pool, or Celery publishing)."""
    dispatcher: Dispatcher = request.app.state.dispatcher
    return dispatcher


async def get_submission_view(request: Request) -> SubmissionView | None:
    """What a caller is shown of a submission, as registered at start-up (see app.main)."""
    view: SubmissionView | None = getattr(request.app.state, "submission_view", None)
    return view


async def get_submission_service(
    settings: SettingsDep,
    sessions: SessionsDep,
    dispatcher: Annotated[Dispatcher, Depends(get_dispatcher)],
    view: Annotated[SubmissionView | None, Depends(get_submission_view)],
) -> SubmissionService:
    return SubmissionService(settings, sessions, dispatcher, view)


SubmissionServiceDep = Annotated[SubmissionService, Depends(get_submission_service)]
