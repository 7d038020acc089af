"""The application's one lifespan: open the database (migrated), start the configured queue's
dispatcher (the embedded pool, or Celery publishing plus the Redis listener for other
processes' commits), and close them in reverse order.

What it opens goes on ``app.state`` for the typed dependencies in ``app/*/deps.py``:
``sessions`` and ``dispatcher``; ``settings`` and ``problems`` are set by ``create_app``;
``readiness`` is read by ``/readyz``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta

from fastapi import FastAPI
from sqlalchemy.orm import Session

from app.auth.first_run import announce, base_url, prepare_first_run
from app.core import events, metrics
from app.core.config import Settings
from app.lti.outbox import enqueue_scores
from app.lti.sender import ScoreSender
from app.mail.sender import MailSender
from app.notify.regrades import regrade_changed
from app.notify.reminders import Reminders
from app.observability.port import MetricsPort
from app.observability.queue import QueueCollector
from app.observability.readiness import Priming, Readiness
from app.similarity.runner import ReportRunner
from app.submissions.models import Submission
from app.submissions.service import Dispatcher
from app.worker.runtime import grading_context, open_database


def after_grading(settings: Settings) -> tuple[Callable[[Session, Submission], None], ...]:
    """What the grading transaction writes besides the grading: the LMS score outbox, and the
    mail to a student whose score a regrade changed."""
    return (enqueue_scores, regrade_changed(base_url(settings)))


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    metrics.configure(settings.metrics_dir)
    events.configure(settings.log_format)
    engine, sessions = open_database(settings)
    first_run = prepare_first_run(settings, sessions)
    if first_run is not None:
        announce(first_run)
    pool = None
    listener = None
    dispatcher: Dispatcher
    readiness = Readiness(engine)
    if settings.queue == "embedded":
        from app.worker.embedded import EmbeddedPool

        context = grading_context(settings, sessions, app.state.problems, after_grading(settings))
        pool = EmbeddedPool(context, settings.workers)
        pool.start()
        dispatcher = pool
        if settings.sandbox_prime:
            readiness.priming = Priming()
            readiness.priming.run(context.prime)
    else:
        from app.submissions.broadcast import Listener
        from app.worker.celery_app import CeleryDispatcher

        dispatcher = CeleryDispatcher(settings, sessions)
        listener = Listener(settings.redis_url)  # the workers' commits, over Redis
        listener.start()
        readiness.redis_url = settings.redis_url
    queue = QueueCollector(sessions)
    metrics.add_collector(queue)
    port = None
    if settings.metrics_port is not None:
        port = MetricsPort(settings.host, settings.metrics_port).start()
    app.state.sessions = sessions
    app.state.dispatcher = dispatcher
    app.state.readiness = readiness
    sender = ScoreSender(sessions, settings)
    sender.start()
    runner = ReportRunner(
        sessions,
        {pid: problem.starter_code for pid, problem in app.state.problems.items()},
        settings.similarity_poll_seconds,
        timedelta(seconds=settings.similarity_lease_seconds),
    )
    runner.start()
    mail_sender = MailSender(sessions, settings)
    mail_sender.start()
    reminders = Reminders(
        sessions,
        base_url(settings),
        settings.mail_reminder_hours,
        settings.mail_reminder_interval_seconds,
    )
    reminders.start()
    try:
        yield
    finally:
        reminders.stop()
        mail_sender.stop()
        runner.stop()
        sender.stop()
        if port is not None:
            port.stop()
        metrics.remove_collector(queue)
        if pool is not None:
            pool.stop()
        if listener is not None:
            listener.stop()
        engine.dispose()
