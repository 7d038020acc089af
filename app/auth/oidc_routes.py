"""Single sign-on routes: start at the provider, come back signed in."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.http import set_session_cookie
from app.auth.models import OidcLogin
from app.auth.oidc import (
    BROWSER_COOKIE,
    COOKIE_PATH,
    LOGIN_LIFETIME,
    Identity,
    Provider,
    begin,
    claim,
    finish,
    provider,
    sso_error,
)
from app.auth.sessions import COOKIE, end_session, start_session
from app.auth.sso_accounts import account_for
from app.core.config import Settings
from app.core.deps import SessionsDep, SettingsDep
from app.core.errors import ApiError, error_responses

router = APIRouter(tags=["accounts"])

_ERRORS = error_responses(
    {
        400: "Unknown, used, expired or foreign state; the provider refused or sent an invalid "
        "id_token",
        403: "The account is disabled",
        404: "Single sign-on is not configured",
        409: "The email's account is linked to another identity",
        502: "The provider did not answer",
    }
)


def _enabled(settings: Settings) -> None:
    if not settings.oidc_enabled:
        raise ApiError(404, "sso_not_configured", "single sign-on is not set up on this server")


def _redirect_uri(request: Request, settings: Settings) -> str:
    if settings.public_url:
        return f"{settings.public_url.rstrip('/')}/api/auth/oidc/callback"
    return str(request.url_for("oidc_callback"))


def _begin(
    sessions: sessionmaker[Session],
    settings: Settings,
    metadata: Provider,
    redirect_uri: str,
    next_path: str,
) -> tuple[str, str]:
    with sessions() as session:
        url, browser = begin(session, settings, metadata, redirect_uri, next_path)
        session.commit()
        return url, browser


@router.get("/api/auth/oidc/login", status_code=302, responses=_ERRORS)
async def oidc_login(
    request: Request,
    sessions: SessionsDep,
    settings: SettingsDep,
    next: Annotated[str, Query(max_length=500, description="Where to go after")] = "/",
) -> RedirectResponse:
    """Sends the browser to the sign-on provider. Anyone, when single sign-on is configured."""
    _enabled(settings)
    metadata, _ = await provider(settings)
    url, browser = await run_in_threadpool(
        _begin, sessions, settings, metadata, _redirect_uri(request, settings), next
    )
    response = RedirectResponse(url, status_code=302)
    response.set_cookie(
        BROWSER_COOKIE,
        browser,
        max_age=int(LOGIN_LIFETIME.total_seconds()),
        path=COOKIE_PATH,
        httponly=True,
        # Lax: the provider sends the browser back with a top-level GET, which Lax allows.
        samesite="lax",
        secure=settings.secure_cookies,
    )
    return response


def _claim(sessions: sessionmaker[Session], state: str, browser: str | None) -> OidcLogin:
    with sessions() as session:
        row = claim(session, state, browser)
        session.expunge(row)
        return row


def _sign_in(
    sessions: sessionmaker[Session], settings: Settings, identity: Identity, old: str | None
) -> str:
    with sessions() as session:
        user = account_for(session, identity)
        if user.disabled_at is not None:
            raise ApiError(403, "account_disabled", "this account is disabled")
        if old:
            end_session(session, old)
        secret, _ = start_session(session, user.id, timedelta(hours=settings.session_hours))
        session.commit()
        return secret


@router.get("/api/auth/oidc/callback", status_code=303, responses=_ERRORS)
async def oidc_callback(
    request: Request,
    sessions: SessionsDep,
    settings: SettingsDep,
    state: Annotated[str | None, Query(max_length=200)] = None,
    code: Annotated[str | None, Query(max_length=2000)] = None,
    error: Annotated[str | None, Query(max_length=200)] = None,
) -> RedirectResponse:
    """Where the provider sends the browser back: checks the state (this browser's, unused,
    fresh), exchanges the code, checks the id_token, signs in and goes to ``next``. Only the
    browser that started the sign-on."""
    _enabled(settings)
    if state is None:
        raise sso_error("the sign-on answer has no state", "invalid_state")
    row = await run_in_threadpool(_claim, sessions, state, request.cookies.get(BROWSER_COOKIE))
    if error is not None or code is None:
        raise sso_error(f"the sign-on provider refused: {error or 'no code'}", "sso_denied")
    identity = await finish(settings, row, code, _redirect_uri(request, settings))
    secret = await run_in_threadpool(
        _sign_in, sessions, settings, identity, request.cookies.get(COOKIE)
    )
    response = RedirectResponse(row.next_path, status_code=303)
    set_session_cookie(response, secret, settings)
    response.delete_cookie(BROWSER_COOKIE, path=COOKIE_PATH, httponly=True, samesite="lax")
    return response
