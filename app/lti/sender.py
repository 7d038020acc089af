"""The score sender: a thread that sends what the outbox has due, every few seconds. Any
number of processes may run one (each line item is held by one sender at a time)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.core.retry import Periodic, SendPolicy
from app.lti.outbox import send_due


def policy_of(settings: Settings) -> SendPolicy:
    return SendPolicy(
        retry_base=timedelta(seconds=settings.lti_retry_base_seconds),
        retry_max=timedelta(seconds=settings.lti_retry_max_seconds),
        give_up_after=timedelta(hours=settings.lti_give_up_hours),
    )


class ScoreSender(Periodic):
    def __init__(self, sessions: sessionmaker[Session], settings: Settings) -> None:
        policy = policy_of(settings)
        super().__init__(
            "lti-score-sender",
            settings.lti_send_interval_seconds,
            lambda: send_due(sessions, policy),
        )
