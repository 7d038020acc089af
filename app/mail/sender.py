"""The mail sender: a thread that sends what the outbox has due, every few seconds. Any number
of processes may run one (each row is held by one sender at a time)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.retry import Periodic, SendPolicy
from app.mail.outbox import send_due
from app.mail.transport import transport_of


def policy_of(settings: Settings) -> SendPolicy:
    return SendPolicy(
        retry_base=timedelta(seconds=settings.mail_retry_base_seconds),
        retry_max=timedelta(seconds=settings.mail_retry_max_seconds),
        give_up_after=timedelta(hours=settings.mail_give_up_hours),
    )


class MailSender(Periodic):
    def __init__(self, sessions: sessionmaker[Session], settings: Settings) -> None:
        policy = policy_of(settings)
        transport = transport_of(settings)
        super().__init__(
            "mail-sender",
            settings.mail_send_interval_seconds,
            lambda: send_due(sessions, transport, settings.smtp_from, policy),
        )
