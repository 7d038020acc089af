"""``POST /api/submissions/{id}/regrade``: grade a finished submission again on the current set.

The row goes back to ``queued`` with ``run`` + 1 and is handed to the submissions service's
dispatcher, so the embedded pool and Celery workers pick it up exactly like a new submission;
the previous result stays in the ``gradings`` table.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Instructor
from app.core.errors import ApiError, ErrorResponse
from app.submissions.repository import SubmissionRepository
from app.submissions.service import SubmissionService

log = logging.getLogger(__name__)
router = APIRouter(tags=["instructors"])


class RegradeAccepted(BaseModel):
    id: str
    status: str
    run: int


def _requeue(service: SubmissionService, submission_id: str) -> tuple[int, bool, bool]:
    """(run, found, requeued)."""
    with service.sessions() as session:
        repo = SubmissionRepository(session)
        submission = repo.requeue_for_regrade(submission_id)
        if submission is None:
            existing = repo.get(submission_id)
            return 0, existing is not None, False
        session.commit()
        return submission.run, True, True


@router.post(
    "/api/submissions/{submission_id}/regrade",
    status_code=202,
    response_model=RegradeAccepted,
    responses={
        c: {"model": ErrorResponse, "description": t}
        for c, t in {
            401: "No bearer token",
            403: "Token unknown or revoked",
            404: "Unknown submission",
            409: "Still queued or running",
        }.items()
    },
)
async def regrade(
    instructor: Instructor, submission_id: str, request: Request, response: Response
) -> RegradeAccepted:
    """Queue a finished submission for grading again on the problem's current test set."""
    service: SubmissionService = request.app.state.submissions
    run, found, requeued = await run_in_threadpool(_requeue, service, submission_id)
    if not found:
        raise ApiError(
            404, "submission_not_found", f"no submission with id {submission_id!r}", "submission_id"
        )
    if not requeued:
        raise ApiError(
            409, "submission_not_done", "the submission is still being graded", "submission_id"
        )
    try:
        service.dispatcher.dispatch(submission_id)
    except Exception:  # committed as queued: the pool's polling or the sweeper still finds it
        log.exception("could not dispatch the regrade of %s; it stays queued", submission_id)
    response.headers["Location"] = f"/api/submissions/{submission_id}"
    return RegradeAccepted(id=submission_id, status="queued", run=run)
