"""The score sender: a thread that sends what the outbox has due, every few seconds. Any
number of processes may run one (each line item is held by one sender at a time)."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.lti.outbox import SendPolicy, send_due

log = logging.getLogger(__name__)


def policy_of(settings: Settings) -> SendPolicy:
    return SendPolicy(
        retry_base=timedelta(seconds=settings.lti_retry_base_seconds),
        retry_max=timedelta(seconds=settings.lti_retry_max_seconds),
        give_up_after=timedelta(hours=settings.lti_give_up_hours),
    )


class ScoreSender:
    def __init__(self, sessions: sessionmaker[Session], settings: Settings) -> None:
        self._sessions = sessions
        self._policy = policy_of(settings)
        self._interval = settings.lti_send_interval_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lti-score-sender", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                send_due(self._sessions, self._policy)
            except Exception:  # the next pass retries; the rows stay in the outbox
                log.exception("LTI score sender pass failed")
