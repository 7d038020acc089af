"""The mail to a student whose submission a regrade gave another score, written by the
grading transaction (a hook of ``app.lifespan.after_grading``)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.assignments.models import Assignment
from app.assignments.notices import page_url
from app.auth.models import User
from app.courses.models import Course
from app.db.base import utcnow
from app.gradebook.scores import scores_visible
from app.mail.messages import REGRADE, notice_message
from app.mail.outbox import enqueue
from app.submissions.models import Grading, Submission


def regrade_changed(base: str) -> Callable[[Session, Submission], None]:
    """The grading-transaction hook that mails a student whose submission a regrade gave
    another score. Only while the assignment shows scores (a hidden score's change is news
    the student must not get) and to those who keep the optional mails on; the mail names the
    assignment and problem, never a score or anything of the run."""

    def hook(session: Session, submission: Submission) -> None:
        if submission.run <= 1 or submission.assignment_id is None or submission.user_id is None:
            return
        scores = dict(
            session.execute(
                select(Grading.run, Grading.score)
                .where(Grading.submission_id == submission.id, Grading.run <= submission.run)
                .order_by(Grading.run.desc())
                .limit(2)
            ).all()
        )
        before = max((run for run in scores if run < submission.run), default=None)
        if before is None or submission.run not in scores:
            return
        if scores[before] == scores[submission.run]:
            return
        assignment = session.get(Assignment, submission.assignment_id)
        user = session.get(User, submission.user_id)
        if assignment is None or user is None or user.email is None:
            return
        if not user.mail_optional or not scores_visible(assignment, utcnow()):
            return
        course = session.get(Course, assignment.course_id)
        assert course is not None
        message = notice_message(
            user.name,
            f"{course.title}: a regrade changed your score on {assignment.title}",
            [
                f"Your course staff regraded {assignment.title} ({submission.problem_id}): "
                "your score changed.",
                "You can turn these mails off on your account page.",
            ],
            page_url(base, assignment),
            "See your score",
        )
        enqueue(session, REGRADE, user.email, message, user_id=user.id, course_id=course.id)

    return hook
