"""The mails an assignment's events send, through the outbox in the event's own transaction:
an extension or override granted (always sent), scores published (optional: only to people
who keep ``users.mail_optional`` on). A regrade's mail is ``app/notify/regrades.py``."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.assignments.models import Assignment, Override
from app.auth.models import User
from app.courses.models import Course, Membership
from app.mail.messages import EXTENSION, SCORES, notice_message
from app.mail.outbox import enqueue


def page_url(base: str, assignment: Assignment) -> str:
    return f"{base}/courses/{assignment.course_id}/assignments/{assignment.id}"


def _students(session: Session, course_id: int, section: str | None = None) -> list[User]:
    where = [
        Membership.course_id == course_id,
        Membership.role == "student",
        Membership.status == "active",
        User.email.is_not(None),
        User.disabled_at.is_(None),
    ]
    if section is not None:
        where.append(Membership.section == section)
    return list(
        session.scalars(select(User).join(Membership, Membership.user_id == User.id).where(*where))
    )


def overrides_granted(
    session: Session, base: str, assignment: Assignment, rows: Sequence[Override]
) -> None:
    """Each student an override names (or every active student of its section) is told what
    changed for them. The caller commits."""
    course = session.get(Course, assignment.course_id)
    assert course is not None
    for row in rows:
        people = (
            [u for u in [session.get(User, row.user_id)] if u is not None and u.email]
            if row.user_id is not None
            else _students(session, course.id, row.section)
        )
        changes = []
        if row.until is not None:
            changes.append(f"You may now submit until {row.until:%Y-%m-%d %H:%M} UTC.")
        if row.extra_attempts:
            changes.append(f"You have {row.extra_attempts} more attempt(s).")
        if row.until is not None and row.credit < 1:
            changes.append(f"Work submitted in the extension counts for {row.credit:.0%}.")
        for user in people:
            assert user.email is not None
            message = notice_message(
                user.name,
                f"{course.title}: an extension on {assignment.title}",
                [f"Your course staff changed {assignment.title} for you.", *changes],
                page_url(base, assignment),
                "Open the assignment",
            )
            enqueue(session, EXTENSION, user.email, message, user_id=user.id, course_id=course.id)


def scores_published(session: Session, base: str, assignment: Assignment) -> None:
    """Every active student who keeps the optional mails on is told the scores are out. The
    caller commits."""
    course = session.get(Course, assignment.course_id)
    assert course is not None
    for user in _students(session, course.id):
        if not user.mail_optional:
            continue
        assert user.email is not None
        message = notice_message(
            user.name,
            f"{course.title}: scores of {assignment.title} are published",
            [
                f"The scores of {assignment.title} are published.",
                "You can turn these mails off on your account page.",
            ],
            page_url(base, assignment),
            "See your score",
        )
        enqueue(session, SCORES, user.email, message, user_id=user.id, course_id=course.id)
