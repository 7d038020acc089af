"""Regrading many submissions at once, each through the one regrade of a submission."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field
from sqlalchemy import ColumnElement

from app.core.errors import ApiError
from app.submissions.listing import SubmissionFilters, matching_ids
from app.submissions.service import SubmissionService


@dataclass(frozen=True)
class RegradeCounts:
    queued: int
    skipped: int
    queue_full: bool


def regrade_each(service: SubmissionService, ids: Sequence[str]) -> RegradeCounts:
    """Each submission through ``SubmissionService.regrade``: a new run on the current test
    set, queued behind students' new submissions (the fair queue serves regrades with workers
    they leave idle). A full queue stops the loop: the rest are counted as skipped."""
    queued = skipped = 0
    for index, submission_id in enumerate(ids):
        try:
            service.regrade(submission_id)
        except ApiError as exc:
            if exc.status_code == 503:
                return RegradeCounts(queued, skipped + len(ids) - index, queue_full=True)
            skipped += 1  # still being graded: its pending run grades on the current set
            continue
        queued += 1
    return RegradeCounts(queued, skipped, queue_full=False)


class RegradeMatchingOut(BaseModel):
    matched: int = Field(description="Submissions the filters matched.")
    queued: int = Field(description="Queued for grading again.")
    skipped: int = Field(description="Still being graded, or refused by a full queue.")
    queue_full: bool


def regrade_matching_in(
    service: SubmissionService, filters: SubmissionFilters, scope: ColumnElement[bool]
) -> RegradeMatchingOut:
    """Every submission in ``scope`` matching ``filters``, through the one regrade; more than
    GRADER_REGRADE_MATCHING_MAX is refused before any is queued."""
    cap = service.settings.regrade_matching_max
    with service.sessions() as session:
        ids = matching_ids(session, filters, cap + 1, scope)
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
