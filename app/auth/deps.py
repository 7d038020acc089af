"""FastAPI dependencies: who is calling, and the gate for instructor routes.

No ``Authorization`` header is a student (no role): student routes need nothing. Instructor
routes answer 401 (with ``WWW-Authenticate: Bearer``) when no bearer token is sent, and 403 when
the token is unknown or revoked. Any route that accepts an optional token also answers 403 for
a bad one, so a typo never silently downgrades an instructor to a student.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.tokens import Principal, authenticate
from app.core.deps import SessionsDep
from app.core.errors import ApiError
from app.core.openapi import documented

_bearer = HTTPBearer(
    auto_error=False,
    description="An instructor or admin token from `python -m app tokens create`.",
)


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def _check(sessions: sessionmaker[Session], token: str) -> Principal | None:
    with sessions() as session:
        return authenticate(session, token)


_CHALLENGE = {401: {"WWW-Authenticate": "The bearer challenge"}}


@documented(
    {401: "Authorization header is not 'Bearer <token>'", 403: "Token unknown or revoked"},
    optional=True,
    headers=_CHALLENGE,
)
async def optional_principal(
    request: Request, credentials: Credentials, sessions: SessionsDep
) -> Principal | None:
    if credentials is None:
        if request.headers.get("authorization"):
            raise ApiError(
                401,
                "unauthenticated",
                "the Authorization header must be 'Bearer <token>'",
                "Authorization",
                headers={"WWW-Authenticate": 'Bearer error="invalid_request"'},
            )
        return None
    principal = await run_in_threadpool(_check, sessions, credentials.credentials)
    if principal is None:
        raise ApiError(
            403, "forbidden", "this token is not a valid instructor token", "Authorization"
        )
    return principal


OptionalPrincipal = Annotated[Principal | None, Depends(optional_principal)]


@documented({401: "No bearer token"}, optional=False, headers=_CHALLENGE)
async def require_instructor(principal: OptionalPrincipal) -> Principal:
    """Instructor or admin; admin passes every instructor check."""
    if principal is None:
        raise ApiError(
            401,
            "unauthenticated",
            "this route needs an instructor token: Authorization: Bearer <token>",
            "Authorization",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return principal


Instructor = Annotated[Principal, Depends(require_instructor)]
