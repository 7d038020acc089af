"""Instructors: the list of practice submissions, filtered, and "regrade all matching"."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.auth.deps import Instructor
from app.core.errors import ApiError, error_responses
from app.submissions.bulk import regrade_each
from app.submissions.deps import SubmissionServiceDep
from app.submissions.listing import (
    MAX_PAGE,
    SubmissionFilters,
    SubmissionPage,
    list_practice,
    matching_ids,
)
from app.submissions.service import SubmissionService

router = APIRouter(tags=["instructors"])

Filters = Annotated[SubmissionFilters, Query()]
_INVALID = {422: "A filter or the cursor is invalid"}


class RegradeMatchingOut(BaseModel):
    matched: int = Field(description="Submissions the filters matched.")
    queued: int = Field(description="Queued for grading again.")
    skipped: int = Field(description="Still being graded, or refused by a full queue.")
    queue_full: bool


@router.get(
    "/api/submissions",
    response_model=SubmissionPage,
    responses=error_responses(_INVALID),
)
async def list_submissions(
    instructor: Instructor,
    service: SubmissionServiceDep,
    filters: Filters,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> SubmissionPage:
    """Practice submissions (outside assignments; a course's are in its gradebook), newest
    first, of every account and anonymous practice. Deployment instructors and admins."""

    def read() -> SubmissionPage:
        with service.sessions() as session:
            return list_practice(session, filters, limit, cursor)

    return await run_in_threadpool(read)


def _regrade_matching(service: SubmissionService, filters: SubmissionFilters) -> RegradeMatchingOut:
    cap = service.settings.regrade_matching_max
    with service.sessions() as session:
        ids = matching_ids(session, filters, cap + 1)
    if len(ids) > cap:
        raise ApiError(
            422,
            "too_many_matching",
            f"more than {cap} submissions match (GRADER_REGRADE_MATCHING_MAX); narrow the "
            "filters, e.g. by problem, verdict or time",
        )
    counts = regrade_each(service, ids)
    return RegradeMatchingOut(
        matched=len(ids), queued=counts.queued, skipped=counts.skipped, queue_full=counts.queue_full
    )


@router.post(
    "/api/submissions/regrade",
    status_code=202,
    response_model=RegradeMatchingOut,
    responses=error_responses(
        {422: "A filter is invalid, or more submissions match than GRADER_REGRADE_MATCHING_MAX"}
    ),
)
async def regrade_matching(
    instructor: Instructor, service: SubmissionServiceDep, filters: Filters
) -> RegradeMatchingOut:
    """Every practice submission matching the filters (as the list takes them) graded again
    on the current test set, each like ``POST /api/submissions/{id}/regrade``: through the fair
    queue, behind new submissions, and stopped by a full queue (``queue_full``)."""
    return await run_in_threadpool(_regrade_matching, service, filters)
