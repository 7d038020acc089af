"""The application's one lifespan: open the database (migrated), start the configured queue's
dispatcher (the embedded pool, or Celery publishing plus the Redis listener for other
processes' commits), and close them in reverse order.

What it opens goes on ``app.state`` for the typed dependencies in ``app/*/deps.py``:
``sessions`` and ``dispatcher``; ``settings`` and ``problems`` are set by ``create_app``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.core.config import Settings
from app.lti.keys import ensure_key
from app.lti.outbox import enqueue_scores
from app.lti.sender import ScoreSender
from app.submissions.service import Dispatcher
from app.worker.runtime import grading_context, open_database

# What the grading transaction writes besides the grading: the LMS score outbox.
AFTER_GRADING = (enqueue_scores,)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    engine, sessions = open_database(settings)
    pool = None
    listener = None
    dispatcher: Dispatcher
    if settings.queue == "embedded":
        from app.worker.embedded import EmbeddedPool

        pool = EmbeddedPool(
            grading_context(settings, sessions, app.state.problems, AFTER_GRADING),
            settings.workers,
        )
        pool.start()
        dispatcher = pool
    else:
        from app.submissions.broadcast import Listener
        from app.worker.celery_app import CeleryDispatcher

        dispatcher = CeleryDispatcher(settings, sessions)
        listener = Listener(settings.redis_url)  # the workers' commits, over Redis
        listener.start()
    app.state.sessions = sessions
    app.state.dispatcher = dispatcher
    with sessions() as session:
        ensure_key(session)  # the LTI tool's signing key, made on the first start
        session.commit()
    sender = ScoreSender(sessions, settings)
    sender.start()
    try:
        yield
    finally:
        sender.stop()
        if pool is not None:
            pool.stop()
        if listener is not None:
            listener.stop()
        engine.dispose()
