"""Wires the submissions feature into the app's lifespan: database, migrations, and the
dispatcher of the configured queue (the embedded pool, or Celery publishing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from app.core.config import Settings
from app.submissions.service import Dispatcher, SubmissionService


def install_submissions(app: FastAPI, settings: Settings) -> None:
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: FastAPI) -> AsyncIterator[Any]:
        from app.worker.runtime import grading_context, open_database

        engine, sessions = open_database(settings)
        pool = None
        listener = None
        dispatcher: Dispatcher
        if settings.queue == "embedded":
            from app.worker.embedded import EmbeddedPool

            problems = application.state.problems
            pool = EmbeddedPool(grading_context(settings, sessions, problems), settings.workers)
            pool.start()
            dispatcher = pool
        else:
            from app.worker.broadcast import Listener
            from app.worker.celery_app import CeleryDispatcher

            dispatcher = CeleryDispatcher(settings, sessions)
            listener = Listener(settings.redis_url)  # the workers' commits, over Redis
            listener.start()
        application.state.submissions = SubmissionService(settings, sessions, dispatcher)
        application.state.event_listener = listener
        try:
            async with previous(application) as state:
                yield state
        finally:
            if pool is not None:
                pool.stop()
            if listener is not None:
                listener.stop()
            engine.dispose()

    app.router.lifespan_context = lifespan
