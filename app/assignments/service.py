"""Assignments in the database: their settings, overrides, and what one student's rules are.

Every rule (dates, credit, attempts, feedback) is decided by ``app.assignments.policy``; this
module only reads the rows that the rules need and writes the ones the API changes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.assignments import policy
from app.assignments.models import (
    Assignment,
    AssignmentProblem,
    Override,
    late_of,
    penalties_of,
)
from app.assignments.schemas import (
    AssignmentFields,
    AssignmentOut,
    AssignmentPatch,
    Attempts,
    LateDeadline,
    MyDates,
    OverrideCreate,
    OverrideOut,
    ProblemEntry,
    ProblemOut,
    check_order,
)
from app.core.errors import ApiError
from app.courses.deps import CourseAccess
from app.courses.models import DEFAULT_POINTS, Course, Membership
from app.courses.tenancy import course_students
from app.db.base import utcnow
from app.problems.loader import Problem
from app.submissions.models import Submission


def assignment_not_found(assignment_id: int) -> ApiError:
    return ApiError(404, "assignment_not_found", f"no assignment {assignment_id}", "assignment_id")


def released(assignment: Assignment, now: datetime) -> bool:
    return assignment.release_at is None or assignment.release_at <= now


def get_assignment(
    session: Session, access: CourseAccess, assignment_id: int, now: datetime | None = None
) -> Assignment:
    """The course's assignment as ``access`` may see it: a student sees none before its
    release (404, as if it did not exist)."""
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.course_id != access.course_id:
        raise assignment_not_found(assignment_id)
    if not access.is_staff and not released(assignment, now or utcnow()):
        raise assignment_not_found(assignment_id)
    return assignment


def problems_of(session: Session, assignment_id: int) -> list[AssignmentProblem]:
    stmt = (
        select(AssignmentProblem)
        .where(AssignmentProblem.assignment_id == assignment_id)
        .order_by(AssignmentProblem.position)
    )
    return list(session.scalars(stmt))


# -- one student's rules ------------------------------------------------------------------------


def grants_for(
    session: Session, assignment_id: int, user_id: int, section: str | None
) -> list[policy.Grant]:
    """The overrides that apply to a student: their own and their section's."""
    targets = Override.user_id == user_id
    if section is not None:
        targets = targets | (Override.section == section)
    rows = session.scalars(select(Override).where(Override.assignment_id == assignment_id, targets))
    return [policy.Grant(r.until, r.credit, r.extra_attempts) for r in rows]


def section_of(session: Session, course_id: int, user_id: int) -> str | None:
    return session.scalar(
        select(Membership.section).where(
            Membership.course_id == course_id, Membership.user_id == user_id
        )
    )


@dataclass(frozen=True)
class StudentRules:
    dates: policy.Dates
    attempts_allowed: int | None


def student_rules(
    session: Session, assignment: Assignment, user_id: int, section: str | None
) -> StudentRules:
    grants = grants_for(session, assignment.id, user_id, section)
    dates = policy.student_dates(
        assignment.release_at,
        assignment.due_at,
        late_of(assignment),
        assignment.after_close,  # type: ignore[arg-type]
        grants,
    )
    return StudentRules(dates, policy.attempts_allowed(assignment.max_attempts, grants))


def graded_attempts_used(
    session: Session, assignment_id: int, user_id: int, problem_id: str
) -> int:
    """The highest graded attempt number taken (numbers are taken in order, from 1)."""
    found = session.scalar(
        select(func.max(Submission.graded_attempt)).where(
            Submission.assignment_id == assignment_id,
            Submission.user_id == user_id,
            Submission.problem_id == problem_id,
        )
    )
    return int(found or 0)


def identical_attempt(
    session: Session, assignment_id: int, user_id: int, problem_id: str, code: str
) -> int | None:
    """The latest graded attempt on the problem with exactly this code, if any."""
    digest = hashlib.sha256(code.encode("utf-8")).hexdigest()
    found = session.scalar(
        select(func.max(Submission.graded_attempt)).where(
            Submission.assignment_id == assignment_id,
            Submission.user_id == user_id,
            Submission.problem_id == problem_id,
            Submission.code_sha256 == digest,
            Submission.graded_attempt.is_not(None),
        )
    )
    return None if found is None else int(found)


# -- reading and writing assignments ------------------------------------------------------------


def assignment_out(
    session: Session,
    assignment: Assignment,
    problems: Mapping[str, Problem],
    access: CourseAccess,
    now: datetime,
) -> AssignmentOut:
    entries = problems_of(session, assignment.id)
    mine = None
    if not access.is_staff:
        rules = student_rules(session, assignment, access.principal.user_id, access.section)
        credit = policy.credit_at(rules.dates, now)
        mine = MyDates(
            due_at=rules.dates.due_at,
            last_deadline=policy.last_deadline(rules.dates),
            open=credit.open,
            credit=credit.credit,
            rule=credit.rule,
            attempts_allowed=rules.attempts_allowed,
        )
    return AssignmentOut(
        id=assignment.id,
        course_id=assignment.course_id,
        title=assignment.title,
        problems=[
            ProblemOut(
                problem_id=e.problem_id,
                points=e.points,
                feedback=e.feedback,
                title=problems[e.problem_id].spec.title if e.problem_id in problems else "",
            )
            for e in entries
        ],
        release_at=assignment.release_at,
        due_at=assignment.due_at,
        late_deadlines=[LateDeadline(until=u, credit=c) for u, c in late_of(assignment)],
        after_close=assignment.after_close,
        scoring=assignment.scoring,
        feedback=assignment.feedback,
        feedback_published_at=assignment.feedback_published_at,
        hide_scores=assignment.hide_scores,
        scores_published_at=assignment.scores_published_at,
        max_attempts=assignment.max_attempts,
        attempt_penalties=penalties_of(assignment),
        rate_limit=assignment.rate_limit,
        rate_window_seconds=assignment.rate_window_seconds,
        per_student_cases=assignment.per_student_cases,
        created_at=assignment.created_at,
        released=released(assignment, now),
        mine=mine,
    )


def list_assignments(session: Session, access: CourseAccess, now: datetime) -> list[Assignment]:
    stmt = (
        select(Assignment)
        .where(Assignment.course_id == access.course_id)
        .order_by(Assignment.due_at, Assignment.id)
    )
    rows = list(session.scalars(stmt))
    if access.is_staff:
        return rows
    return [a for a in rows if released(a, now)]


def fields_of(session: Session, assignment: Assignment) -> AssignmentFields:
    """The stored assignment as a body, for a PATCH to be merged into."""
    return AssignmentFields(
        title=assignment.title,
        problems=[
            ProblemEntry(problem_id=e.problem_id, points=e.points, feedback=e.feedback)
            for e in problems_of(session, assignment.id)
        ],
        release_at=assignment.release_at,
        due_at=assignment.due_at,
        late_deadlines=[LateDeadline(until=u, credit=c) for u, c in late_of(assignment)],
        after_close=assignment.after_close,
        scoring=assignment.scoring,
        feedback=assignment.feedback,
        hide_scores=assignment.hide_scores,
        max_attempts=assignment.max_attempts,
        attempt_penalties=penalties_of(assignment),
        rate_limit=assignment.rate_limit,
        rate_window_seconds=assignment.rate_window_seconds,
        per_student_cases=assignment.per_student_cases,
    )


def merged(current: AssignmentFields, patch: AssignmentPatch) -> AssignmentFields:
    data = current.model_dump()
    data.update(patch.model_dump(include=patch.model_fields_set))
    return AssignmentFields.model_validate(data)


def validate(fields: AssignmentFields, problems: Mapping[str, Problem]) -> None:
    check_order(fields)
    for n, entry in enumerate(fields.problems):
        if entry.problem_id not in problems:
            raise ApiError(
                422,
                "unknown_problem",
                f"no problem with id {entry.problem_id!r}",
                f"problems[{n}].problem_id",
            )


def store(session: Session, assignment: Assignment, fields: AssignmentFields) -> None:
    """Write ``fields`` into ``assignment`` and replace its problem list."""
    assignment.title = fields.title
    assignment.release_at = fields.release_at
    assignment.due_at = fields.due_at
    assignment.late_deadlines = json.dumps(
        [d.model_dump(mode="json") for d in fields.late_deadlines]
    )
    assignment.after_close = fields.after_close
    assignment.scoring = fields.scoring
    assignment.feedback = fields.feedback
    assignment.hide_scores = fields.hide_scores
    assignment.max_attempts = fields.max_attempts
    assignment.attempt_penalties = json.dumps(fields.attempt_penalties)
    assignment.rate_limit = fields.rate_limit
    assignment.rate_window_seconds = fields.rate_window_seconds
    assignment.per_student_cases = fields.per_student_cases
    session.add(assignment)
    session.flush()
    for old in problems_of(session, assignment.id):
        session.delete(old)
    session.flush()
    course = session.get(Course, assignment.course_id)
    default_points = course.default_points if course is not None else DEFAULT_POINTS
    for position, entry in enumerate(fields.problems):
        session.add(
            AssignmentProblem(
                assignment_id=assignment.id,
                problem_id=entry.problem_id,
                points=entry.points if entry.points is not None else default_points,
                position=position,
                feedback=entry.feedback,
            )
        )


def publish(assignment: Assignment, feedback: bool, scores: bool, now: datetime) -> None:
    if feedback:
        assignment.feedback_published_at = now
    if scores:
        assignment.scores_published_at = now


# -- overrides ----------------------------------------------------------------------------------


def override_out(row: Override) -> OverrideOut:
    return OverrideOut(
        id=row.id,
        assignment_id=row.assignment_id,
        user_id=row.user_id,
        section=row.section,
        until=row.until,
        credit=row.credit,
        extra_attempts=row.extra_attempts,
        note=row.note,
        created_by=row.created_by,
        created_at=row.created_at,
    )


def list_overrides(session: Session, assignment_id: int) -> list[Override]:
    stmt = select(Override).where(Override.assignment_id == assignment_id).order_by(Override.id)
    return list(session.scalars(stmt))


def add_overrides(
    session: Session, access: CourseAccess, assignment: Assignment, body: OverrideCreate
) -> list[Override]:
    """One override per student named, or one for the section; nothing is written unless every
    target is valid (an active student of the course, an existing section)."""
    if body.until is not None and body.until <= assignment.due_at and body.credit >= 1.0:
        raise ApiError(
            422, "extension_too_early", "an extension's until must be after the due date", "until"
        )
    if body.section is not None:
        exists = session.scalar(
            select(func.count()).where(
                Membership.course_id == access.course_id, Membership.section == body.section
            )
        )
        if not exists:
            raise ApiError(
                422, "unknown_section", f"no section {body.section!r} in this course", "section"
            )
        targets: Sequence[tuple[int | None, str | None]] = [(None, body.section)]
    else:
        user_ids = [body.user_id] if body.user_id is not None else list(body.user_ids or [])
        if len(set(user_ids)) != len(user_ids):
            raise ApiError(422, "duplicate_user", "a user id is listed twice", "user_ids")
        active = course_students(session, access.course_id, user_ids)
        for n, user_id in enumerate(user_ids):
            if user_id not in active:
                field = "user_id" if body.user_id is not None else f"user_ids[{n}]"
                raise ApiError(
                    422,
                    "not_enrolled",
                    f"user {user_id} is not an active student of this course",
                    field,
                )
        targets = [(u, None) for u in user_ids]
    rows = [
        Override(
            assignment_id=assignment.id,
            user_id=user_id,
            section=section,
            until=body.until,
            credit=body.credit,
            extra_attempts=body.extra_attempts,
            note=body.note,
            created_by=access.principal.user_id,
            created_at=utcnow(),
        )
        for user_id, section in targets
    ]
    session.add_all(rows)
    session.flush()
    return rows


# -- submitting ---------------------------------------------------------------------------------


def rate_window_start(now: datetime, seconds: int) -> datetime:
    return now - timedelta(seconds=seconds)


def recent_graded(
    session: Session, assignment_id: int, user_id: int, problem_id: str, since: datetime
) -> tuple[int, datetime | None]:
    count, oldest = session.execute(
        select(func.count(), func.min(Submission.received_at)).where(
            Submission.assignment_id == assignment_id,
            Submission.user_id == user_id,
            Submission.problem_id == problem_id,
            Submission.graded_attempt.is_not(None),
            Submission.received_at >= since,
        )
    ).one()
    if isinstance(oldest, str):  # SQLite returns aggregates of timestamps as text
        oldest = datetime.fromisoformat(oldest)
    if oldest is not None and oldest.tzinfo is None:
        oldest = oldest.replace(tzinfo=UTC)
    return int(count or 0), oldest


def problem_attempts(
    session: Session,
    assignment: Assignment,
    access: CourseAccess,
    problem_id: str,
    now: datetime,
) -> Attempts:
    """What the problem page shows beside the editor."""
    from app.assignments.feedback import work_cut

    user_id = access.principal.user_id
    rules = student_rules(session, assignment, user_id, access.section)
    credit = policy.credit_at(rules.dates, now)
    cut = work_cut(session, assignment, problem_id, access.principal, now, staff=access.is_staff)
    level: policy.FeedbackLevel = "visible" if cut is None else cut.level
    return Attempts(
        problem_id=problem_id,
        attempts_used=graded_attempts_used(session, assignment.id, user_id, problem_id),
        attempts_allowed=None if access.is_staff else rules.attempts_allowed,
        feedback=level,
        due_at=rules.dates.due_at,
        credit_now=0.0 if access.is_staff else credit.credit,
        rule="staff: practice, never counts" if access.is_staff else credit.rule,
        open=credit.open,
    )
