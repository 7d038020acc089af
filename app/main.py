"""The ASGI application: ``app.main:app``, or ``create_app(settings)`` for tests."""

from __future__ import annotations

import logging

from fastapi import FastAPI

from app.core.config import Settings, get_settings
from app.core.errors import install_error_handlers
from app.problems.loader import load_problems
from app.problems.routes import router as problems_router
from app.submissions.routes import router as submissions_router
from app.submissions.setup import install_submissions
from app.testcases.install import install_instructors
from app.web.routes import install_web
from app.web.wheel import router as wheel_router

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    if settings.sandbox == "process":
        log.warning(
            "GRADER_SANDBOX=process: submissions run WITHOUT isolation, as this server's user. "
            "Development only: never grade code that is not your own this way."
        )
    app = FastAPI(
        title="TensorJudge",
        version="0.1.0",
        description=(
            "Grades machine-learning coding problems and says which requirement failed and why."
        ),
    )
    app.state.settings = settings
    # Loaded eagerly: a malformed problem folder must stop start-up, not the first request.
    app.state.problems = load_problems(settings.problems_dir, settings.extra_problem_dirs)
    install_error_handlers(app)
    app.include_router(problems_router)
    install_web(app)
    app.include_router(wheel_router)
    app.include_router(submissions_router)
    install_submissions(app, settings)
    install_instructors(app)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


app = create_app()
