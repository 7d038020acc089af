"""``POST /api/submissions/{id}/regrade``: grade a finished submission again on the current set.

The row goes back to ``queued`` with ``run`` + 1 and is handed to the submissions service's
dispatcher, so the embedded pool and Celery workers pick it up exactly like a new submission;
the previous result stays in the ``gradings`` table. A regrade takes a place in the queue like
a new submission, so it is refused with 503 ``queue_full`` under the same cap.
"""

from __future__ import annotations

import logging
from enum import Enum

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Instructor
from app.core.errors import AUTH_ERRORS, ApiError, error_responses
from app.submissions.repository import DONE, SubmissionRepository
from app.submissions.service import SubmissionService, queue_full

log = logging.getLogger(__name__)
router = APIRouter(tags=["instructors"])


class RegradeAccepted(BaseModel):
    id: str
    status: str
    run: int


class Requeue(Enum):
    DONE = "done"
    NOT_FOUND = "not_found"
    NOT_DONE = "not_done"
    QUEUE_FULL = "queue_full"


def _requeue(service: SubmissionService, submission_id: str) -> tuple[Requeue, int]:
    """(outcome, the new run). The queue cap is checked by the requeue's own UPDATE, like a
    new submission's admission, so a script cannot queue more than ``GRADER_QUEUE_MAX``."""
    with service.sessions() as session:
        repo = SubmissionRepository(session)
        submission = repo.requeue_for_regrade(submission_id, max_active=service.settings.queue_max)
        if submission is not None:
            session.commit()
            return Requeue.DONE, submission.run
        existing = repo.get(submission_id)
        if existing is None:
            return Requeue.NOT_FOUND, 0
        # Still being graded outranks a full queue: retrying later would not help either way.
        return (Requeue.QUEUE_FULL if existing.status == DONE else Requeue.NOT_DONE), 0


_RESPONSES = error_responses(
    {
        **AUTH_ERRORS,
        404: "Unknown submission",
        409: "Still queued or running",
        503: "Queue full: GRADER_QUEUE_MAX submissions are queued or running",
    },
    retry_after=(503,),
)


@router.post(
    "/api/submissions/{submission_id}/regrade",
    status_code=202,
    response_model=RegradeAccepted,
    responses=_RESPONSES,
)
async def regrade(
    instructor: Instructor, submission_id: str, request: Request, response: Response
) -> RegradeAccepted:
    """Queue a finished submission for grading again on the problem's current test set."""
    service: SubmissionService = request.app.state.submissions
    outcome, run = await run_in_threadpool(_requeue, service, submission_id)
    if outcome is Requeue.NOT_FOUND:
        raise ApiError(
            404, "submission_not_found", f"no submission with id {submission_id!r}", "submission_id"
        )
    if outcome is Requeue.NOT_DONE:
        raise ApiError(
            409, "submission_not_done", "the submission is still being graded", "submission_id"
        )
    if outcome is Requeue.QUEUE_FULL:
        raise queue_full()
    try:
        service.dispatcher.dispatch(submission_id)
    except Exception:  # committed as queued: the pool's polling or the sweeper still finds it
        log.exception("could not dispatch the regrade of %s; it stays queued", submission_id)
    response.headers["Location"] = f"/api/submissions/{submission_id}"
    return RegradeAccepted(id=submission_id, status="queued", run=run)
