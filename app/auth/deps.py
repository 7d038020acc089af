"""FastAPI dependencies: who is calling, and the gates for signed-in and instructor routes.

A caller is an account when it sends a bearer token (the client, scripts) or the session cookie
of a signed-in page; else it is anonymous. Routes that need an account answer 401 (with
``WWW-Authenticate: Bearer``) to an anonymous caller; any route answers 403 for an unknown or
revoked token, so a typo never silently downgrades an instructor to a student. A request with
the session cookie and a method that changes state must carry the session's CSRF token in
``X-CSRF-Token`` (403 ``csrf_failed`` otherwise); a bearer token needs none, since a browser never
sends one on its own.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.sessions import COOKIE, CSRF_HEADER, SAFE_METHODS, csrf_ok, session_principal
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


def _check_session(sessions: sessionmaker[Session], secret: str) -> tuple[Principal, str] | None:
    with sessions() as session:
        return session_principal(session, secret)


async def _from_cookie(request: Request, sessions: sessionmaker[Session]) -> Principal | None:
    secret = request.cookies.get(COOKIE)
    if not secret:
        return None
    found = await run_in_threadpool(_check_session, sessions, secret)
    if found is None:
        return None  # expired or signed out: anonymous, and the page offers to sign in
    principal, csrf = found
    if request.method not in SAFE_METHODS and not csrf_ok(csrf, request.headers.get(CSRF_HEADER)):
        raise ApiError(
            403,
            "csrf_failed",
            f"this request needs the page's {CSRF_HEADER} header; reload the page",
            CSRF_HEADER,
        )
    return principal


_CHALLENGE = {401: {"WWW-Authenticate": "The bearer challenge"}}


@documented(
    {
        401: "Authorization header is not 'Bearer <token>'",
        403: "Token unknown or revoked, or the session's CSRF token missing",
    },
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
        return await _from_cookie(request, sessions)
    principal = await run_in_threadpool(_check, sessions, credentials.credentials)
    if principal is None:
        raise ApiError(403, "forbidden", "this token is unknown or revoked", "Authorization")
    return principal


OptionalPrincipal = Annotated[Principal | None, Depends(optional_principal)]


@documented(
    {401: "No bearer token", 403: "Not an instructor's account"},
    optional=False,
    headers=_CHALLENGE,
)
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
    if not principal.is_instructor:
        raise ApiError(403, "forbidden", "this route is for instructors", "Authorization")
    return principal


Instructor = Annotated[Principal, Depends(require_instructor)]


@documented({401: "Not signed in and no bearer token"}, optional=False, headers=_CHALLENGE)
async def require_user(principal: OptionalPrincipal) -> Principal:
    """Any signed-in account (a token or, once signed in on the page, a session)."""
    if principal is None:
        raise ApiError(
            401,
            "unauthenticated",
            "sign in first, or send a token: Authorization: Bearer <token>",
            "Authorization",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return principal


CurrentUser = Annotated[Principal, Depends(require_user)]


@documented({403: "Not an admin"}, optional=False)
async def require_admin(principal: CurrentUser) -> Principal:
    """The deployment's administrators only."""
    if not principal.is_admin:
        raise ApiError(403, "forbidden", "this route is for administrators", "Authorization")
    return principal


Admin = Annotated[Principal, Depends(require_admin)]
