"""Regrading an assignment: every graded attempt through the submissions' own regrade."""

from __future__ import annotations

from app.gradebook.schemas import RegradeOut
from app.gradebook.service import GradebookService
from app.submissions.bulk import regrade_each
from app.submissions.service import SubmissionService


def regrade_all(
    gradebook: GradebookService, submissions: SubmissionService, course_id: int, assignment_id: int
) -> RegradeOut:
    """Each graded attempt of the assignment, queued again (refused once the queue is full)."""
    counts = regrade_each(submissions, gradebook.graded_submissions(course_id, assignment_id))
    return RegradeOut(queued=counts.queued, skipped=counts.skipped, queue_full=counts.queue_full)
