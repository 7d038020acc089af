"""Reminders before a due date: once, to the active students with nothing accepted and attempts
left who keep the optional mails on; none for an assignment due later or already due."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.models import User
from app.db.base import utcnow
from app.mail.models import MailOut
from app.notify.reminders import remind_due
from tests.gradebook.factories import MHA, add_attempt, make_assignment
from tests.support.people import add_student, seed_people

BASE = "https://judge.example.edu"


def reminded(sessions: sessionmaker[Session]) -> list[tuple[str, str]]:
    with sessions() as session:
        rows = session.scalars(select(MailOut).order_by(MailOut.id))
        return [(row.to_address, row.subject) for row in rows]


def test_reminders_go_once_to_those_who_need_them(sessions) -> None:
    people = seed_people(sessions)
    course = people.courses["course"]
    now = utcnow()
    soon = make_assignment(
        sessions, course, [(MHA, 10.0)], title="Soon", due_at=now + timedelta(hours=12),
        max_attempts=2,
    )  # fmt: skip
    make_assignment(sessions, course, [(MHA, 10.0)], title="Later", due_at=now + timedelta(days=3))
    make_assignment(sessions, course, [(MHA, 10.0)], title="Past", due_at=now - timedelta(hours=1))
    add_student(sessions, people, "spent")
    add_student(sessions, people, "quiet")
    hour_ago = now - timedelta(hours=1)
    add_attempt(sessions, soon, people.users["student_b"], MHA, 1, hour_ago, 1.0)  # accepted
    add_attempt(sessions, soon, people.users["spent"], MHA, 1, hour_ago, 0.0)
    add_attempt(sessions, soon, people.users["spent"], MHA, 2, hour_ago, 0.5)  # no attempts left
    with sessions() as session:
        quiet = session.get(User, people.users["quiet"])
        assert quiet is not None
        quiet.mail_optional = False
        session.commit()

    assert remind_due(sessions, BASE, 24, now) == 1
    [(to, subject)] = reminded(sessions)
    assert to == "student@example.edu" and "Soon is due" in subject
    # Once: the next pass (or another process's) finds nobody new.
    assert remind_due(sessions, BASE, 24, now + timedelta(minutes=1)) == 0
    assert len(reminded(sessions)) == 1
    # Turned off: nothing at all.
    assert remind_due(sessions, BASE, 0, now) == 0
