"""Regrading an assignment: every graded attempt through the submissions' own regrade."""

from __future__ import annotations

from app.core.errors import ApiError
from app.gradebook.schemas import RegradeOut
from app.gradebook.service import GradebookService
from app.submissions.service import SubmissionService


def regrade_all(
    gradebook: GradebookService, submissions: SubmissionService, course_id: int, assignment_id: int
) -> RegradeOut:
    """Each graded attempt through the submissions' own regrade: a new run on the current test
    set, queued behind students' new submissions (the fair queue serves regrades with workers
    they leave idle), and refused once the queue is full."""
    queued = skipped = 0
    ids = gradebook.graded_submissions(course_id, assignment_id)
    for index, submission_id in enumerate(ids):
        try:
            submissions.regrade(submission_id)
        except ApiError as exc:
            if exc.status_code == 503:
                skipped += len(ids) - index
                return RegradeOut(queued=queued, skipped=skipped, queue_full=True)
            skipped += 1  # still being graded: its pending run grades on the current set
            continue
        queued += 1
    return RegradeOut(queued=queued, skipped=skipped, queue_full=False)
