"""Regrading many submissions at once, each through the one regrade of a submission."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.core.errors import ApiError
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
