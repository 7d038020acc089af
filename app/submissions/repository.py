"""Every SQL statement of the submissions feature.

State changes that workers race on are single conditional UPDATEs (compare-and-set on
``status`` and ``lease_token``), so they are atomic on SQLite and PostgreSQL alike without
holding a read-then-write transaction open.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from app.db.base import utcnow
from app.submissions.models import Grading, Submission, SubmissionEvent

QUEUED = "queued"
RUNNING = "running"
DONE = "done"


class SubmissionRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # -- reads ---------------------------------------------------------------------------------

    def get(self, submission_id: str) -> Submission | None:
        return self.session.get(Submission, submission_id, populate_existing=True)

    def find_by_idempotency_key(self, client: str, key: str) -> Submission | None:
        stmt = select(Submission).where(
            Submission.client == client, Submission.idempotency_key == key
        )
        return self.session.scalars(stmt).first()

    def count_active(self) -> int:
        stmt = select(func.count()).where(Submission.status.in_((QUEUED, RUNNING)))
        return int(self.session.scalar(stmt) or 0)

    def recent_by_client(self, client: str, since: datetime) -> tuple[int, datetime | None]:
        """How many submissions ``client`` created since ``since``, and the oldest of them."""
        stmt = select(func.count(), func.min(Submission.created_at)).where(
            Submission.client == client, Submission.created_at >= since
        )
        count, oldest = self.session.execute(stmt).one()
        if isinstance(oldest, str):  # SQLite returns aggregates of timestamps as text
            oldest = datetime.fromisoformat(oldest)
        if oldest is not None and oldest.tzinfo is None:
            oldest = oldest.replace(tzinfo=utcnow().tzinfo)
        return int(count or 0), oldest

    def events_after(self, submission_id: str, after_id: int) -> Sequence[SubmissionEvent]:
        stmt = (
            select(SubmissionEvent)
            .where(SubmissionEvent.submission_id == submission_id, SubmissionEvent.id > after_id)
            .order_by(SubmissionEvent.id)
        )
        return self.session.scalars(stmt).all()

    def gradings_for(self, submission_id: str) -> Sequence[Grading]:
        stmt = select(Grading).where(Grading.submission_id == submission_id).order_by(Grading.id)
        return self.session.scalars(stmt).all()

    # -- writes (the caller commits) -----------------------------------------------------------

    def add(self, submission: Submission) -> None:
        self.session.add(submission)
        self.session.flush()
        self.add_event(submission.id, "status", {"status": QUEUED})

    def add_event(self, submission_id: str, kind: str, data: dict[str, Any]) -> None:
        self.session.add(
            SubmissionEvent(submission_id=submission_id, kind=kind, data=json.dumps(data))
        )

    def claim_next(self, token: str, worker: str, lease: timedelta) -> Submission | None:
        """Take the oldest queued submission, or None. Safe against concurrent claimers."""
        oldest = (
            select(Submission.id)
            .where(Submission.status == QUEUED)
            .order_by(Submission.created_at, Submission.id)
            .limit(1)
        )
        if self.session.get_bind().dialect.name == "postgresql":
            oldest = oldest.with_for_update(skip_locked=True)
        return self._claim(Submission.id == oldest.scalar_subquery(), token, worker, lease)

    def claim(
        self, submission_id: str, token: str, worker: str, lease: timedelta
    ) -> Submission | None:
        """Take this submission if it is queued, or running under a lease that has expired."""
        return self._claim(Submission.id == submission_id, token, worker, lease)

    def _claim(self, which: Any, token: str, worker: str, lease: timedelta) -> Submission | None:
        now = utcnow()
        claimable = or_(
            Submission.status == QUEUED,
            and_(Submission.status == RUNNING, Submission.lease_expires_at < now),
        )
        stmt = (
            update(Submission)
            .where(which, claimable)
            .values(
                status=RUNNING,
                lease_token=token,
                lease_expires_at=now + lease,
                worker=worker,
                attempts=Submission.attempts + 1,
                started_at=now,
            )
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
        claimed = self.session.execute(stmt).scalar_one_or_none()
        if claimed is None:
            return None
        submission = self.get(claimed)
        assert submission is not None
        self.add_event(
            claimed, "status", {"status": RUNNING, "attempt": submission.attempts, "worker": worker}
        )
        return submission

    def _update_leased(self, submission_id: str, token: str, **values: Any) -> bool:
        """Update a running submission only while ``token`` holds its lease: every write a
        grader makes goes through this guard, so a grader that lost its lease writes nothing."""
        stmt = (
            update(Submission)
            .where(
                Submission.id == submission_id,
                Submission.status == RUNNING,
                Submission.lease_token == token,
            )
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        return bool(self.session.execute(stmt).rowcount)  # type: ignore[attr-defined]

    def renew_lease(self, submission_id: str, token: str, lease: timedelta) -> bool:
        return self._update_leased(submission_id, token, lease_expires_at=utcnow() + lease)

    def finish(
        self,
        submission: Submission,
        token: str,
        *,
        verdict: str,
        score: float,
        report_json: str,
        test_set_version: int | None,
        phases: dict[str, float],
    ) -> bool:
        """Store the result if ``token`` still holds the lease. False: someone else owns it now.

        The guarded UPDATE, the ``gradings`` row (unique per run) and the events are one
        transaction: the caller commits on True and rolls back on False.
        """
        now = utcnow()
        finished = self._update_leased(
            submission.id,
            token,
            status=DONE,
            verdict=verdict,
            score=score,
            report=report_json,
            test_set_version=test_set_version,
            finished_at=now,
            lease_token=None,
            lease_expires_at=None,
        )
        if not finished:
            return False
        self.session.add(
            Grading(
                submission_id=submission.id,
                run=submission.run,
                attempt=submission.attempts,
                test_set_version=test_set_version,
                verdict=verdict,
                score=score,
                report=report_json,
                worker=submission.worker,
                started_at=submission.started_at,
                finished_at=now,
            )
        )
        for phase, seconds in phases.items():
            self.add_event(submission.id, "phase", {"phase": phase, "seconds": seconds})
        self.add_event(submission.id, "status", {"status": DONE, "verdict": verdict})
        # The SSE endpoint sends the stored submission itself for this event.
        self.add_event(
            submission.id, "result", {"verdict": verdict, "score": score, "run": submission.run}
        )
        self.session.flush()
        return True

    def release(self, submission_id: str, token: str, reason: str) -> bool:
        """Give a claimed submission back to the queue (the grader failed, not the code)."""
        if not self._update_leased(
            submission_id,
            token,
            status=QUEUED,
            lease_token=None,
            lease_expires_at=None,
            enqueued_at=None,
        ):
            return False
        self.add_event(submission_id, "status", {"status": QUEUED, "retry": reason})
        return True

    def requeue_running(self, *, expired_only: bool) -> list[str]:
        """Hand running submissions back to the queue: all of them (embedded start-up, where
        this process is the only grader), or only those whose worker stopped renewing its lease.
        """
        conditions = [Submission.status == RUNNING]
        if expired_only:
            conditions.append(Submission.lease_expires_at < utcnow())
        stmt = (
            update(Submission)
            .where(*conditions)
            .values(status=QUEUED, lease_token=None, lease_expires_at=None, enqueued_at=None)
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
        ids = list(self.session.execute(stmt).scalars())
        for submission_id in ids:
            self.add_event(submission_id, "status", {"status": QUEUED, "requeued": True})
        return ids

    def mark_enqueued(self, submission_id: str) -> None:
        stmt = (
            update(Submission)
            .where(Submission.id == submission_id)
            .values(enqueued_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        self.session.execute(stmt)

    def take_unsent(self, older_than: timedelta, resend_after: timedelta) -> list[str]:
        """Queued rows with no job in the broker (never sent, or sent so long ago that the job
        may be lost). Marks them sent, so concurrent sweepers do not both resend a row."""
        now = utcnow()
        stmt = (
            update(Submission)
            .where(
                Submission.status == QUEUED,
                Submission.created_at < now - older_than,
                or_(
                    Submission.enqueued_at.is_(None),
                    Submission.enqueued_at < now - resend_after,
                ),
            )
            .values(enqueued_at=now)
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
        return list(self.session.execute(stmt).scalars())

    def requeue_for_regrade(self, submission_id: str) -> Submission | None:
        """(Issue 6) Queue a finished submission for another grading run: ``run`` + 1, the
        previous result cleared here and kept in ``gradings``. None unless it is ``done``."""
        stmt = (
            update(Submission)
            .where(Submission.id == submission_id, Submission.status == DONE)
            .values(
                status=QUEUED,
                run=Submission.run + 1,
                # max_attempts bounds the attempts of one run, so a regrade starts afresh.
                attempts=0,
                lease_token=None,
                lease_expires_at=None,
                enqueued_at=None,
                verdict=None,
                score=None,
                report=None,
                test_set_version=None,
                started_at=None,
                finished_at=None,
            )
            .returning(Submission.id)
            .execution_options(synchronize_session=False)
        )
        if self.session.execute(stmt).scalar_one_or_none() is None:
            return None
        submission = self.get(submission_id)
        assert submission is not None
        self.add_event(submission_id, "status", {"status": QUEUED, "regrade": submission.run})
        return submission
