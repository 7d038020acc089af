"""The report runner: a thread that computes queued similarity reports one at a time. Any
number of processes may run one (a report is held by one runner at a time, under a lease);
a report left running by a process that stopped is taken again when its lease runs out."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.core.retry import Periodic
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


class ReportRunner(Periodic):
    """Runs due reports every ``interval`` seconds; a failed pass leaves them queued."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        starters: Mapping[str, str],
        interval: float,
        lease: timedelta,
    ) -> None:
        super().__init__("similarity-runner", interval, lambda: run_due(sessions, starters, lease))
