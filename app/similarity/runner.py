"""The report runner: a thread that computes queued similarity reports one at a time. Any
number of processes may run one (a report is held by one runner at a time, under a lease);
a report left running by a process that stopped is taken again when its lease runs out."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.db.base import utcnow
from app.similarity import repository
from app.similarity.service import compute

log = logging.getLogger(__name__)


def run_due(sessions: sessionmaker[Session], starters: Mapping[str, str], lease: timedelta) -> int:
    """Compute every report that is due: how many were computed."""
    done = 0
    while True:
        with sessions() as session:
            row = repository.claim(session, utcnow(), lease)
            if row is None:
                return done
            try:
                compute(session, row, starters)
            except Exception as exc:  # a bad report must not stop the others
                log.exception("similarity report %s failed", row.id)
                session.rollback()
                repository.finish(session, row, error=f"the report failed: {type(exc).__name__}")
            done += 1


class ReportRunner:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        starters: Mapping[str, str],
        interval: float,
        lease: timedelta,
    ) -> None:
        self._sessions = sessions
        self._starters = starters
        self._interval = interval
        self._lease = lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="similarity-runner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                run_due(self._sessions, self._starters, self._lease)
            except Exception:  # the next pass retries; the reports stay queued
                log.exception("similarity runner pass failed")
