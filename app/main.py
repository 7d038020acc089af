"""The ASGI application: ``app.main:app``, or ``create_app(settings)`` for tests.

The one place that wires the service: every router is in ``ROUTERS``, the one lifespan is
``app.lifespan``, and the built web assets are mounted under ``/static``.
"""

from __future__ import annotations

import logging
import re

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from app.assignments.catalog_cases import router as catalog_cases_router
from app.assignments.feedback import assignment_view
from app.assignments.pages import router as assignment_pages_router
from app.assignments.routes import router as assignments_router
from app.auth.account_routes import router as account_router
from app.auth.admin_config import router as admin_config_router
from app.auth.admin_routes import router as admin_users_router
from app.auth.hashing_slots import HashingSlots
from app.auth.oidc_routes import router as oidc_router
from app.auth.routes import router as accounts_router
from app.auth.setup_routes import router as setup_router
from app.authoring.check import startup_defects
from app.core.arrival import ArrivalMiddleware
from app.core.bodies import BodyLimitMiddleware
from app.core.config import Settings, get_settings
from app.core.errors import install_error_handlers
from app.core.openapi import install_openapi
from app.core.proxies import ForwardedScheme
from app.courses.pages import router as course_pages_router
from app.courses.routes import roster_cap
from app.courses.routes import router as courses_router
from app.gradebook.course_submissions import one_router as submission_regrade_router
from app.gradebook.course_submissions import router as course_submissions_router
from app.gradebook.pages import router as gradebook_pages_router
from app.gradebook.routes import router as gradebook_router
from app.lifespan import lifespan
from app.lti.api_routes import router as lti_api_router
from app.lti.routes import router as lti_router
from app.notify.invitations import invite_enrolled
from app.notify.routes import router as mail_router
from app.observability.routes import router as observability_router
from app.problems.loader import frameworks_off, load_problems
from app.problems.routes import router as problems_router
from app.reports.routes import course_router as course_reports_router
from app.reports.routes import router as reports_router
from app.signup.routes import pages as signup_pages_router
from app.signup.routes import router as signup_router
from app.similarity.pages import router as similarity_pages_router
from app.similarity.routes import router as similarity_router
from app.submissions.list_routes import router as submission_list_router
from app.submissions.pressure import PRESSURE
from app.submissions.routes import body_cap as submission_body_cap
from app.submissions.routes import router as submissions_router
from app.testcases.course_routes import router as course_cases_router
from app.testcases.routes import body_cap as case_body_cap
from app.testcases.routes import router as testcases_router
from app.web.routes import STATIC_DIR
from app.web.routes import router as pages_router
from app.web.wheel import router as wheel_router

log = logging.getLogger(__name__)

BODY_CEILING_SLACK = 1024 * 1024
# The routes that accept a submission: their bodies are read on arrival (app.core.arrival).
SUBMISSION_PATHS = re.compile(
    r"/api/problems/[^/]+/submissions"
    r"|/api/courses/[^/]+/assignments/[^/]+/problems/[^/]+/submissions"
)

health_router = APIRouter(tags=["health"])


@health_router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


# The submission routes come first: a request is matched against the routes in this order, and
# submitting and reading submissions is nearly all of the traffic (no other route matches their
# paths, so the order changes nothing else).
ROUTERS = (
    submissions_router,
    accounts_router,
    courses_router,
    course_pages_router,
    account_router,
    admin_users_router,
    admin_config_router,
    setup_router,
    signup_router,
    signup_pages_router,
    oidc_router,
    problems_router,
    pages_router,
    wheel_router,
    submission_list_router,
    catalog_cases_router,
    testcases_router,
    course_cases_router,
    reports_router,
    course_reports_router,
    assignments_router,
    assignment_pages_router,
    gradebook_router,
    course_submissions_router,
    submission_regrade_router,
    gradebook_pages_router,
    similarity_router,
    similarity_pages_router,
    lti_router,
    lti_api_router,
    mail_router,
    health_router,
    observability_router,
)


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
        lifespan=lifespan,
        # Metrics are Prometheus's (app.core.metrics) and logs the project's own: without this,
        # every request asked whether an OpenTelemetry provider had been configured meanwhile.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.hashing_slots = HashingSlots(
        settings.password_hashing_slots, settings.password_hashing_wait_seconds
    )
    # What a caller is shown of a submission: an assignment's feedback policy decides for its
    # submissions (app.submissions imports no rule package).
    app.state.submission_view = assignment_view
    # Who a roster import's people are invited by: app.notify (app.courses cannot import it).
    app.state.roster_invite = invite_enrolled
    # Loaded eagerly: a malformed problem folder must stop start-up, not the first request; one
    # that fails the checks of `problems check` needing no sandbox is not served either.
    app.state.problems = load_problems(
        settings.problems_dir,
        settings.extra_problem_dirs,
        vet=startup_defects,
        frameworks_off=frameworks_off(settings),
    )
    install_error_handlers(app)
    # Every route that reads a body caps it itself; this ceiling bounds one that forgets to. It
    # is above the largest cap, so a route's own 413 (which names its limit) answers first.
    ceiling = BODY_CEILING_SLACK + max(
        submission_body_cap(settings.max_code_bytes).limit,
        case_body_cap(settings.case_max_upload_bytes).limit,
        roster_cap(settings.roster_max_bytes).limit,
    )
    app.add_middleware(BodyLimitMiddleware, limit=ceiling)
    app.add_middleware(ForwardedScheme, settings=settings)
    # Added last, so it runs first: a request's arrival is taken before anything else is done.
    app.add_middleware(
        ArrivalMiddleware,
        settings=settings,
        eager=SUBMISSION_PATHS,
        cap=submission_body_cap(settings.max_code_bytes).limit,
        opens=PRESSURE.accepting_one,
    )
    for router in ROUTERS:
        app.include_router(router)
    # Every route documents the errors and credentials its dependencies imply (docs/api.md).
    install_openapi(app)
    # Works (with a message on each page) before the assets are built.
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    return app


app = create_app()
