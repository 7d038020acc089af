"""The queue as the database has it, computed at each scrape: one read, never a stored gauge that
could disagree with the table after a crash."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy.orm import Session, sessionmaker

from app.core.metrics import NAMESPACE
from app.db.base import utcnow
from app.submissions.repository import SubmissionRepository


class QueueCollector:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def collect(self) -> Iterator[Metric]:
        with self._sessions() as session:
            queued, running, oldest = SubmissionRepository(session).queue_stats()
        age = 0.0 if oldest is None else max(0.0, (utcnow() - oldest).total_seconds())
        yield GaugeMetricFamily(
            f"{NAMESPACE}_queue_depth", "Submissions queued, not yet claimed.", value=queued
        )
        yield GaugeMetricFamily(
            f"{NAMESPACE}_submissions_running", "Submissions being graded.", value=running
        )
        yield GaugeMetricFamily(
            f"{NAMESPACE}_queue_oldest_age_seconds",
            "Age of the oldest queued submission (0 when none is queued).",
            value=age,
        )

    def describe(self) -> Iterator[Metric]:
        # Described without a database read, so registering it reads nothing.
        return iter(())
