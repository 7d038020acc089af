"""The grading transaction's regrade mail: written when a regrade changed the submission's score
and the student may see scores, to a student who keeps the optional mails on; never a score in
it; nothing when the score stayed, the scores are hidden, or the student opted out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.models import User
from app.db.base import utcnow
from app.mail.models import MailOut
from app.notify.regrades import regrade_changed
from app.submissions.models import Grading, Submission
from tests.gradebook.factories import MHA, add_attempt, make_assignment, report
from tests.support.people import seed_people


def regraded(
    sessions: sessionmaker[Session], before: float, after: float, **assignment: object
) -> tuple[int, str]:
    people = seed_people(sessions)
    student = people.users["student"]
    aid = make_assignment(sessions, people.courses["course"], title="Attention", **assignment)
    sid = add_attempt(sessions, aid, student, MHA, 1, utcnow() - timedelta(hours=1), before)
    with sessions() as session:
        for run, score in ((1, before), (2, after)):
            session.add(
                Grading(
                    submission_id=sid,
                    run=run,
                    attempt=1,
                    verdict="wrong_answer",
                    score=score,
                    report=report("wrong_answer", score),
                )
            )
        row = session.get(Submission, sid)
        assert row is not None
        row.run, row.score = 2, after
        session.commit()
    return student, sid


def run_hook(sessions: sessionmaker[Session], sid: str) -> list[MailOut]:
    with sessions() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        regrade_changed("https://judge.example.edu")(session, submission)
        session.commit()
        return list(session.scalars(select(MailOut)))


def test_a_changed_score_is_mailed_without_the_score(sessions) -> None:
    _, sid = regraded(sessions, 0.5, 1.0)
    [mail] = run_hook(sessions, sid)
    assert (mail.kind, mail.to_address) == ("regrade_changed", "student@example.edu")
    assert "Attention" in mail.subject and mail.text_body is not None
    assert "1.0" not in mail.text_body and "0.5" not in mail.text_body
    assert "50" not in mail.text_body and "100" not in mail.text_body


@pytest.mark.parametrize("case", ["same score", "scores hidden", "opted out"])
def test_no_mail(sessions, case: str) -> None:
    student, sid = regraded(
        sessions, 0.5, 0.5 if case == "same score" else 1.0, hide_scores=case == "scores hidden"
    )
    if case == "opted out":
        with sessions() as session:
            user = session.get(User, student)
            assert user is not None
            user.mail_optional = False
            session.commit()
    assert run_hook(sessions, sid) == []
