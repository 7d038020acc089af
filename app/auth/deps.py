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

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Proof:
    """What a request presents as its caller, read from its headers alone (no database): a
    bearer token, else the session cookie with the CSRF header it came with; None of either,
    anonymous. ``principal_of_proof`` checks it against the database."""

    token: str | None = None
    cookie: str | None = None
    csrf: str | None = None
    safe_method: bool = True


def proof_of(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Proof:
    """The request's ``Proof``; 401 for an Authorization header that is not a bearer token."""
    if credentials is not None:
        return Proof(token=credentials.credentials)
    if request.headers.get("authorization"):
        raise ApiError(
            401,
            "unauthenticated",
            "the Authorization header must be 'Bearer <token>'",
            "Authorization",
            headers={"WWW-Authenticate": 'Bearer error="invalid_request"'},
        )
    return Proof(
        cookie=request.cookies.get(COOKIE) or None,
        csrf=request.headers.get(CSRF_HEADER),
        safe_method=request.method in SAFE_METHODS,
    )


def principal_of_proof(session: Session, proof: Proof) -> Principal | None:
    """The caller ``proof`` names, or None (anonymous, or a session expired or signed out: the
    page offers to sign in); 403 for an unknown or revoked token or a missing CSRF token."""
    if proof.token is not None:
        principal = authenticate(session, proof.token)
        if principal is None:
            raise ApiError(403, "forbidden", "this token is unknown or revoked", "Authorization")
        return principal
    if proof.cookie is None:
        return None
    found = session_principal(session, proof.cookie)
    if found is None:
        return None
    principal, csrf = found
    if not proof.safe_method and not csrf_ok(csrf, proof.csrf):
        raise ApiError(
            403,
            "csrf_failed",
            f"this request needs the page's {CSRF_HEADER} header; reload the page",
            CSRF_HEADER,
        )
    return principal


def _principal(sessions: sessionmaker[Session], proof: Proof) -> Principal | None:
    with sessions() as session:
        return principal_of_proof(session, proof)


def signed_in(principal: Principal | None) -> Principal:
    """``principal``, or 401 for an anonymous caller."""
    if principal is None:
        raise ApiError(
            401,
            "unauthenticated",
            "sign in first, or send a token: Authorization: Bearer <token>",
            "Authorization",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return principal


CHALLENGE = {401: {"WWW-Authenticate": "The bearer challenge"}}
OPTIONAL_PRINCIPAL_ERRORS = {
    401: "Authorization header is not 'Bearer <token>'",
    403: "Token unknown or revoked, or the session's CSRF token missing",
}
REQUIRE_USER_ERRORS = {401: "Not signed in and no bearer token"}


@documented(OPTIONAL_PRINCIPAL_ERRORS, optional=True, headers=CHALLENGE)
async def optional_principal(
    request: Request, credentials: Credentials, sessions: SessionsDep
) -> Principal | None:
    proof = proof_of(request, credentials)
    if proof.token is None and proof.cookie is None:
        return None
    return await run_in_threadpool(_principal, sessions, proof)


OptionalPrincipal = Annotated[Principal | None, Depends(optional_principal)]


@documented(
    {401: "No bearer token", 403: "Not an instructor's account"},
    optional=False,
    headers=CHALLENGE,
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


@documented(REQUIRE_USER_ERRORS, optional=False, headers=CHALLENGE)
async def require_user(principal: OptionalPrincipal) -> Principal:
    """Any signed-in account (a token or, once signed in on the page, a session)."""
    return signed_in(principal)


CurrentUser = Annotated[Principal, Depends(require_user)]


@documented({403: "Not an admin"}, optional=False)
async def require_admin(principal: CurrentUser) -> Principal:
    """The deployment's administrators only."""
    if not principal.is_admin:
        raise ApiError(403, "forbidden", "this route is for administrators", "Authorization")
    return principal


Admin = Annotated[Principal, Depends(require_admin)]
