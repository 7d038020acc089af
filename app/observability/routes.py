"""``GET /metrics`` (Prometheus text format) and ``GET /readyz``."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool

from app.auth.deps import Credentials, optional_principal
from app.core import metrics
from app.core.deps import SessionsDep, SettingsDep
from app.core.errors import ApiError, ErrorResponse
from app.core.openapi import documented
from app.observability.readiness import Readiness

router = APIRouter(tags=["operations"])


@documented(
    {
        401: "No credentials: the scrape token or an admin's",
        403: "Not the scrape token, and not an admin",
    },
    optional=False,
)
async def require_scraper(
    request: Request, credentials: Credentials, settings: SettingsDep, sessions: SessionsDep
) -> None:
    """Prometheus with ``GRADER_METRICS_TOKEN``, or an admin."""
    token = settings.metrics_token
    if (
        token is not None
        and credentials is not None
        and hmac.compare_digest(credentials.credentials.encode(), token.get_secret_value().encode())
    ):
        return
    principal = await optional_principal(request, credentials, sessions)
    if principal is None:
        raise ApiError(
            401,
            "unauthenticated",
            "send the scrape token: Authorization: Bearer <GRADER_METRICS_TOKEN>",
            "Authorization",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not principal.is_admin:
        raise ApiError(403, "forbidden", "metrics are for administrators", "Authorization")


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "content": {metrics.CONTENT_TYPE: {"schema": {"type": "string"}}},
            "description": "Prometheus text format",
        }
    },
)
async def get_metrics(_: Annotated[None, Depends(require_scraper)]) -> Response:
    """Every counter and histogram of the processes sharing this one's metrics directory, and
    the queue as the database has it now."""
    body = await run_in_threadpool(metrics.exposition)
    return Response(content=body, media_type=metrics.CONTENT_TYPE)


@router.get(
    "/readyz",
    responses={503: {"model": ErrorResponse, "description": "Not ready: the message says why"}},
)
async def readyz(request: Request) -> dict[str, str]:
    """Ready for traffic: the database migrated, the sandbox primed (embedded mode), the broker
    answering (Celery mode). ``/healthz`` says only that the process lives."""
    readiness: Readiness | None = getattr(request.app.state, "readiness", None)
    if readiness is None:
        raise ApiError(503, "not_ready", "starting")
    problems = await run_in_threadpool(readiness.problems)
    if problems:
        raise ApiError(503, "not_ready", "; ".join(problems))
    return {"status": "ready"}
