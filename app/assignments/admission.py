"""Whether a submission in an assignment is accepted, and as which graded attempt: run by the
submissions service in the transaction that inserts the row (see ``Admission`` there), so the
attempt number it takes is checked against the rows committed before it, and the unique index
on (assignment, user, problem, graded attempt) refuses a concurrent twin."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app.assignments import policy
from app.assignments.service import (
    get_assignment,
    graded_attempts_used,
    identical_attempt,
    recent_graded,
    student_rules,
)
from app.core.errors import ApiError
from app.courses.deps import CourseAccess
from app.submissions.schemas import SubmissionCreate
from app.submissions.service import Admission, Owner


@dataclass(frozen=True)
class AssignmentAdmission:
    """``Admission`` for a submission in an assignment (see the module's docstring)."""

    access: CourseAccess
    assignment_id: int
    problem_id: str

    @property
    def scope(self) -> str:
        return f"assignment:{self.assignment_id}"

    def __call__(self, session: Session, now: datetime, body: SubmissionCreate) -> Owner:
        return _admit(self.access, self.assignment_id, self.problem_id, session, now, body)


def admission(access: CourseAccess, assignment_id: int, problem_id: str) -> Admission:
    return AssignmentAdmission(access, assignment_id, problem_id)


def _admit(
    access: CourseAccess,
    assignment_id: int,
    problem_id: str,
    session: Session,
    now: datetime,
    body: SubmissionCreate,
) -> Owner:
    user_id = access.principal.user_id
    assignment = get_assignment(session, access, assignment_id, now)
    practice = Owner(user_id=user_id, assignment_id=assignment.id)
    # Examples runs never cost an attempt; staff submissions are practice.
    if body.mode == "examples" or access.is_staff:
        return practice
    rules = student_rules(session, assignment, user_id, access.section)
    credit = policy.credit_at(rules.dates, now)
    if not credit.open:
        closed = policy.last_deadline(rules.dates).isoformat()
        raise ApiError(
            409,
            "assignment_closed",
            f"this assignment closed at {closed}; submissions are no longer accepted",
            "assignment_id",
        )
    if now > policy.last_deadline(rules.dates):
        return practice  # after_close: practice, no credit
    if assignment.rate_limit is not None:
        window = timedelta(seconds=assignment.rate_window_seconds)
        count, oldest = recent_graded(session, assignment.id, user_id, problem_id, now - window)
        if count >= assignment.rate_limit:
            wait = (oldest + window - now).total_seconds() if oldest else 1.0
            raise ApiError(
                429,
                "assignment_rate_limited",
                f"at most {assignment.rate_limit} graded submissions per "
                f"{assignment.rate_window_seconds} s on this problem; retry later",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
    used = graded_attempts_used(session, assignment.id, user_id, problem_id)
    if rules.attempts_allowed is not None and used >= rules.attempts_allowed:
        raise ApiError(
            409,
            "attempts_exhausted",
            f"all {rules.attempts_allowed} graded attempts on this problem are used "
            f"({used} of {rules.attempts_allowed}); running the examples is still free",
            "problem_id",
        )
    # Asked only while an attempt is left: spending one is what the question is about.
    if not body.force:
        same = identical_attempt(session, assignment.id, user_id, problem_id, body.code)
        if same is not None:
            raise ApiError(
                409,
                "identical_resubmission",
                f"this code is identical to your graded attempt {same}; nothing was spent. "
                "Send it again with force to spend an attempt on it anyway",
                "code",
            )
    return Owner(user_id=user_id, assignment_id=assignment.id, graded_attempt=used + 1)
