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
from app.submissions.service import Dispatcher
from app.worker.runtime import grading_context, open_database


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
            grading_context(settings, sessions, app.state.problems), settings.workers
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
    try:
        yield
    finally:
        if pool is not None:
            pool.stop()
        if listener is not None:
            listener.stop()
        engine.dispose()
