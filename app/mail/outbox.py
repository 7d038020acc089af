"""The mail outbox: what an event's transaction writes (``enqueue``) and what the sender does
with it (``send_due``).

A mail is written in the same transaction as the event that sends it (an invitation, a reset
link, an extension...), so it is sent if and only if the event was committed. The sender takes
one row at a time (``claimed_until``: any number of processes may send, never two the same row
at once), hands it to the transport outside any transaction, then records the outcome: sent;
refused with 5xx (failed at once, shown to staff); or down, hanging, 4xx (tried again after an
exponential backoff, failed after ``give_up_after``). A crash between a send and its commit
sends that mail again once, with the same Message-ID."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.core.retry import SendPolicy
from app.db.base import utcnow
from app.mail.models import MailOut
from app.mail.transport import Deferred, Mail, Refused, Transport

log = logging.getLogger(__name__)

PENDING, SENT, FAILED = "pending", "sent", "failed"
BATCH = 100


@dataclass(frozen=True)
class Message:
    """What a mail says: a subject, a plain-text body and, optionally, the same in HTML."""

    subject: str
    text: str
    html: str | None = None


def enqueue(
    session: Session,
    kind: str,
    to: str,
    message: Message,
    *,
    user_id: int | None = None,
    course_id: int | None = None,
    ref: str | None = None,
) -> MailOut:
    """Adds a mail to the outbox in the caller's transaction; the caller commits. With
    ``ref``, a second mail with the same ``ref`` to the same person fails to insert."""
    now = utcnow()
    row = MailOut(
        kind=kind,
        to_address=to,
        subject=message.subject[:300],
        text_body=message.text,
        html_body=message.html,
        user_id=user_id,
        course_id=course_id,
        ref=ref,
        status=PENDING,
        attempts=0,
        next_attempt_at=now,
        created_at=now,
    )
    session.add(row)
    return row


def _message_id(row: MailOut, sender: str) -> str:
    domain = sender.rpartition("@")[2] or "localhost"
    return f"<tj-mail-{row.id}.{int(row.created_at.timestamp())}@{domain}>"


def _claim(session: Session, row_id: int, now: datetime, policy: SendPolicy) -> bool:
    done = session.execute(
        update(MailOut)
        .where(
            MailOut.id == row_id,
            MailOut.status == PENDING,
            or_(MailOut.claimed_until.is_(None), MailOut.claimed_until < now),
        )
        .values(claimed_until=now + policy.lease)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return bool(done.rowcount)  # type: ignore[attr-defined]


def _finish(row: MailOut, status: str, error: str | None) -> None:
    row.status = status
    row.last_error = None if error is None else error[:1000]
    # The bodies may carry a one-use link: once the mail is out (or never will be), the
    # database keeps only what the status view shows.
    row.text_body = row.html_body = None


def send_one(
    session: Session, row_id: int, transport: Transport, sender: str, policy: SendPolicy
) -> bool:
    """Sends one claimed row and records the outcome; True when the server took it."""
    row = session.get(MailOut, row_id)
    if row is None or row.status != PENDING or row.text_body is None:
        return False
    mail = Mail(
        to=row.to_address,
        subject=row.subject,
        text=row.text_body,
        html=row.html_body,
        message_id=_message_id(row, sender),
    )
    session.commit()  # no transaction stays open while the server is talked to
    refused = deferred = None
    try:
        transport.send(mail)
    except Refused as exc:
        refused = str(exc)
        log.warning("mail %d to %s refused: %s", row_id, mail.to, exc)
    except Deferred as exc:
        deferred = str(exc)
        log.warning("mail %d to %s deferred: %s", row_id, mail.to, exc)
    now = utcnow()
    row.attempts += 1
    if refused is not None:
        _finish(row, FAILED, f"refused: {refused}")
    elif deferred is not None:
        row.last_error = deferred[:1000]
        row.next_attempt_at = now + policy.backoff(row.attempts)
        if now - row.created_at > policy.give_up_after:
            _finish(row, FAILED, f"gave up: {deferred}")
    else:
        _finish(row, SENT, None)
        row.sent_at = now
    row.claimed_until = None
    session.commit()
    return refused is None and deferred is None


def send_due(
    sessions: sessionmaker[Session], transport: Transport, sender: str, policy: SendPolicy
) -> int:
    """One pass over what is due, oldest first: the number of mails the server took."""
    now = utcnow()
    with sessions() as session:
        due = session.scalars(
            select(MailOut.id)
            .where(
                MailOut.status == PENDING,
                MailOut.next_attempt_at <= now,
                or_(MailOut.claimed_until.is_(None), MailOut.claimed_until < now),
            )
            .order_by(MailOut.id)
            .limit(BATCH)
        ).all()
    sent = 0
    for row_id in due:
        with sessions() as session:
            if _claim(session, row_id, now, policy):
                sent += send_one(session, row_id, transport, sender, policy)
    return sent
