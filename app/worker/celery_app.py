"""The scale-out mode: Celery over Redis, with workers as separate ``python -m app worker``
processes on any number of machines sharing the database and Redis.

Delivery is at-least-once: a job is acknowledged only after it ran (``acks_late``), so a worker
killed mid-grade leaves it unacknowledged and Redis hands it out again after
``visibility_timeout``. Grading is idempotent on top of that: a job only grades a submission it
can claim (queued, or running under an expired lease), and the result is stored only under the
claim's lease token, so a redelivered or duplicated job never grades or stores twice.

A job is a turn of a worker, not an order to grade one submission: it grades the next
submission in fair order (at most one running per client), whichever that is, or nothing when
every client with queued work already has one running. The worker that finishes a grading then
publishes one more job if a submission became claimable (its client's next one), so the jobs
that found nothing lose no submission.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from celery import Celery
from sqlalchemy.orm import Session, sessionmaker

from app.core import events, metrics
from app.core.config import Settings
from app.submissions.repository import SubmissionRepository
from app.worker.grader import GradingContext, claim_and_grade, next_claimable

log = logging.getLogger(__name__)

TASK_NAME = "tensorjudge.grade"
QUEUE_NAME = "tensorjudge"

# Set in worker processes by ``run_worker`` before Celery starts consuming.
_context: GradingContext | None = None
_celery: Celery | None = None


def make_celery(settings: Settings) -> Celery:
    app = Celery("tensorjudge", broker=settings.redis_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # One job reserved per thread: a killed worker strands as few jobs as possible.
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout,
            # Look for jobs of dead workers every few seconds (kombu's default scan is every
            # 100 s), so recovery takes about visibility_timeout, not minutes more.
            "unacked_restore_interval": max(1, min(10, int(settings.visibility_timeout / 4))),
            "unacked_restore_throttle": 1,
        },
        broker_connection_retry_on_startup=True,
        task_ignore_result=True,
        task_default_queue=QUEUE_NAME,
        task_serializer="json",
        accept_content=["json"],
        worker_hijack_root_logger=False,
    )
    app.task(name=TASK_NAME, ignore_result=True)(_grade_task)
    return app


def _grade_task(submission_id: str) -> bool:
    """``submission_id``: the submission this job was published for; it is graded in its
    client's turn, by this job or a later one."""
    if _context is None or _celery is None:
        raise RuntimeError("the grading context is set up by `python -m app worker`")
    if claim_and_grade(_context) is None:
        return False
    # One job per grading, not a loop in this one: a job stays short (a worker's warm shutdown
    # waits for it) and a crash loses nothing (the job is acknowledged only after this).
    following = next_claimable(_context)
    if following is not None:
        _celery.send_task(TASK_NAME, args=[following], queue=QUEUE_NAME)
    return True


class CeleryDispatcher:
    """Used by the API: publish a job for a committed submission and note when it was sent."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._celery = make_celery(settings)

    def reserve(self) -> None:
        return None  # the graders are the Celery workers' processes

    def dispatch(self, submission_id: str) -> None:
        self._celery.send_task(TASK_NAME, args=[submission_id], queue=QUEUE_NAME)
        with self._sessions() as session:
            SubmissionRepository(session).mark_enqueued(submission_id)
            session.commit()


class Sweeper:
    """Runs in every worker: re-queues submissions whose worker died (lease expired) and
    (re)publishes queued rows with no job in Redis (API crashed between commit and publish,
    or Redis lost its data). Duplicate jobs are harmless: only one can claim."""

    def __init__(self, ctx: GradingContext, celery: Celery) -> None:
        self._ctx = ctx
        self._celery = celery
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def sweep(self) -> list[str]:
        settings = self._ctx.settings
        with self._ctx.sessions() as session:
            repo = SubmissionRepository(session)
            requeued = repo.requeue_running(expired_only=True)
            unsent = repo.take_unsent(
                older_than=timedelta(seconds=max(2.0, settings.sweep_seconds)),
                resend_after=timedelta(seconds=settings.visibility_timeout),
            )
            session.commit()
        if requeued:
            log.warning(
                "re-queued %d submissions whose worker stopped: %s", len(requeued), requeued
            )
            metrics.leases_expired(len(requeued))
            for submission_id in requeued:
                events.state_changed(submission_id, None, "requeued", reason="lease_expired")
        # Re-queued rows are among the unsent (re-queueing clears ``enqueued_at``): each gets a
        # job now, which also gives their client's turn back to the queue.
        for submission_id in unsent:
            self._celery.send_task(TASK_NAME, args=[submission_id], queue=QUEUE_NAME)
        return unsent

    def _loop(self) -> None:
        while not self._stop.wait(self._ctx.settings.sweep_seconds):
            try:
                self.sweep()
            except Exception:
                log.exception("sweep failed")


def run_worker(ctx: GradingContext, concurrency: int) -> None:
    """Consume grading jobs until stopped; the grading context must be ready."""
    global _context, _celery
    _context = ctx
    celery = _celery = make_celery(ctx.settings)
    sweeper = Sweeper(ctx, celery)
    sweeper.start()
    try:
        celery.worker_main(
            [
                "worker",
                "--pool=threads",
                f"--concurrency={concurrency}",
                f"--queues={QUEUE_NAME}",
                f"--hostname=tensorjudge-{ctx.name}",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
            ]
        )
    finally:
        sweeper.stop()
