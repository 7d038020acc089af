"""Reminders before a due date: once per student and assignment, to each active student of the
course who has nothing accepted in it yet and attempts left (the optional mails). A pass runs
with the mail sender's; the outbox's unique (person, ref) keeps two processes' passes from
reminding anyone twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.assignments.models import Assignment, AssignmentProblem
from app.assignments.notices import page_url
from app.auth.models import User
from app.core.retry import Periodic
from app.courses.models import Course, Membership
from app.db.base import utcnow
from app.mail.messages import REMINDER, notice_message
from app.mail.models import MailOut
from app.mail.outbox import enqueue
from app.submissions.models import Submission


def _ref(assignment_id: int) -> str:
    return f"reminder:assignment:{assignment_id}"


def _to_remind(session: Session, assignment: Assignment) -> list[User]:
    ref = _ref(assignment.id)
    students = session.scalars(
        select(User)
        .join(Membership, Membership.user_id == User.id)
        .where(
            Membership.course_id == assignment.course_id,
            Membership.role == "student",
            Membership.status == "active",
            User.email.is_not(None),
            User.disabled_at.is_(None),
            User.mail_optional.is_(True),
            ~select(MailOut.id).where(MailOut.user_id == User.id, MailOut.ref == ref).exists(),
        )
    ).all()
    graded = (Submission.assignment_id == assignment.id, Submission.graded_attempt.is_not(None))
    accepted = set(
        session.scalars(
            select(Submission.user_id).where(*graded, Submission.verdict == "accepted").distinct()
        )
    )
    out = [u for u in students if u.id not in accepted]
    if assignment.max_attempts is None:
        return out
    # Attempts left: some problem not yet tried max_attempts times (extra attempts granted by
    # an override are not counted: such a student may go unreminded, never wrongly reminded).
    used = session.execute(
        select(Submission.user_id, func.count(Submission.id))
        .where(*graded)
        .group_by(Submission.user_id, Submission.problem_id)
    ).all()
    problems = session.scalar(
        select(func.count())
        .select_from(AssignmentProblem)
        .where(AssignmentProblem.assignment_id == assignment.id)
    )
    full: dict[int, int] = {}
    for user_id, count in used:
        if user_id is not None and count >= assignment.max_attempts:
            full[user_id] = full.get(user_id, 0) + 1
    return [u for u in out if full.get(u.id, 0) < (problems or 1)]


def remind_due(sessions: sessionmaker[Session], base: str, hours: float, now: datetime) -> int:
    """One pass: the reminders written to the outbox."""
    if hours <= 0:
        return 0
    written = 0
    with sessions() as session:
        soon = session.scalars(
            select(Assignment).where(
                Assignment.due_at > now,
                Assignment.due_at <= now + timedelta(hours=hours),
                or_(Assignment.release_at.is_(None), Assignment.release_at <= now),
            )
        ).all()
        for assignment in soon:
            course = session.get(Course, assignment.course_id)
            if course is None or course.archived_at is not None:
                continue
            for user in _to_remind(session, assignment):
                assert user.email is not None
                message = notice_message(
                    user.name,
                    f"{course.title}: {assignment.title} is due "
                    f"{assignment.due_at:%Y-%m-%d %H:%M} UTC",
                    [
                        f"{assignment.title} is due {assignment.due_at:%Y-%m-%d %H:%M} UTC and "
                        "you have nothing accepted in it yet.",
                        "You can turn these mails off on your account page.",
                    ],
                    page_url(base, assignment),
                    "Open the assignment",
                )
                try:
                    with session.begin_nested():
                        enqueue(
                            session,
                            REMINDER,
                            user.email,
                            message,
                            user_id=user.id,
                            course_id=course.id,
                            ref=_ref(assignment.id),
                        )
                    written += 1
                except IntegrityError:  # another process's pass reminded them meanwhile
                    continue
        session.commit()
    return written


class Reminders(Periodic):
    """Looks for assignments due soon every ``interval`` seconds."""

    def __init__(
        self, sessions: sessionmaker[Session], base: str, hours: float, interval: float = 60.0
    ) -> None:
        super().__init__(
            "mail-reminders", interval, lambda: remind_due(sessions, base, hours, utcnow())
        )
