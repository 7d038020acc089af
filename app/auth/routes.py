"""Accounts API, sign-in side: who is calling, signing in and out, a reset link's password,
and the client's token exchange."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.accounts import live_reset_link, redeem_reset_link
from app.auth.deps import OptionalPrincipal
from app.auth.http import (
    check_same_site,
    clear_session_cookie,
    read_json,
    set_session_cookie,
)
from app.auth.models import User
from app.auth.passwords import PasswordError, check_new_password
from app.auth.schemas import LoginIn, Me, ResetIn, TokenCreated, TokenExchangeIn, UserOut
from app.auth.sessions import COOKIE, end_session, revoke_credentials, session_principal
from app.auth.sessions import start_session as open_session
from app.auth.signin import check_password, new_password_hash
from app.auth.tokens import TokenError, issue_token
from app.auth.views import token_out
from app.core.bodies import json_body_schema
from app.core.config import Settings
from app.core.deps import SessionsDep, SettingsDep
from app.core.errors import ApiError, error_responses

router = APIRouter(tags=["accounts"])

_SIGN_IN_ERRORS = {
    400: "Body is not JSON",
    403: "Cross-site request, or the account is disabled",
    413: "Body too large",
    415: "Body is not application/json",
    422: "Invalid body",
}
_BUSY = {503: "Too many sign-ins or password changes at once"}


def user_out(user: User) -> UserOut:
    return UserOut(id=user.id, name=user.name, email=user.email, role=user.role)


def _me(sessions: sessionmaker[Session], user_id: int, secret: str | None) -> Me:
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        found = session_principal(session, secret) if secret else None
        csrf = found[1] if found is not None and found[0].user_id == user_id else None
        return Me(user=user_out(user), csrf_token=csrf)


@router.get(
    "/api/auth/me",
    response_model=Me,
)
async def me(request: Request, principal: OptionalPrincipal, sessions: SessionsDep) -> Me:
    """The signed-in account (None when anonymous) and the session's CSRF token. Anyone."""
    if principal is None:
        return Me(user=None, csrf_token=None)
    secret = None if principal.token_id is not None else request.cookies.get(COOKIE)
    return await run_in_threadpool(_me, sessions, principal.user_id, secret)


def signed_in(
    session: Session, settings: Settings, user: User, old_secret: str | None
) -> tuple[Me, str]:
    """A new session of ``user`` (ending the browser's previous one): (Me, cookie secret)."""
    if old_secret:
        end_session(session, old_secret)
    secret, csrf = open_session(session, user.id, timedelta(hours=settings.session_hours))
    session.commit()
    return Me(user=user_out(user), csrf_token=csrf), secret


def _login(
    sessions: sessionmaker[Session], settings: Settings, user_id: int, old_secret: str | None
) -> tuple[Me, str]:
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        return signed_in(session, settings, user, old_secret)


@router.post(
    "/api/auth/login",
    response_model=Me,
    openapi_extra=json_body_schema(LoginIn),
    responses=error_responses(
        {
            **_SIGN_IN_ERRORS,
            **_BUSY,
            401: "Wrong email or password",
            429: "Too many failed sign-ins",
        },
        retry_after=(429, 503),
    ),
)
async def login(
    request: Request,
    response: Response,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> Me:
    """Sign in with email and password: sets the session cookie and answers who signed in with
    the session's CSRF token. Anyone; only from this site's own pages (JSON only)."""
    check_same_site(request, settings)
    body = await read_json(request, LoginIn)
    user_id = await check_password(request, sessions, settings, body.email, body.password)
    me_, secret = await run_in_threadpool(
        _login, sessions, settings, user_id, request.cookies.get(COOKIE)
    )
    set_session_cookie(response, secret, settings)
    return me_


def _logout(sessions: sessionmaker[Session], secret: str) -> None:
    with sessions() as session:
        end_session(session, secret)
        session.commit()


@router.post(
    "/api/auth/logout",
    status_code=204,
    response_class=Response,
    responses=error_responses({403: "Missing X-CSRF-Token with the session cookie"}),
)
async def logout(
    request: Request, principal: OptionalPrincipal, sessions: SessionsDep, settings: SettingsDep
) -> Response:
    """End this browser's session and clear its cookie. Anyone (a live session needs its
    X-CSRF-Token, so another site cannot sign a person out)."""
    secret = request.cookies.get(COOKIE)
    if secret:
        await run_in_threadpool(_logout, sessions, secret)
    response = Response(status_code=204)
    clear_session_cookie(response, settings)
    return response


def _invalid_link() -> ApiError:
    return ApiError(
        400,
        "invalid_reset_link",
        "this link is unknown, already used or expired; ask for a new one",
        "secret",
    )


def _check_link(sessions: sessionmaker[Session], secret: str) -> None:
    """400 or 403 before any argon2 work: a made-up secret must not cost a hash."""
    with sessions() as session:
        link = live_reset_link(session, secret)
        if link is None:
            raise _invalid_link()
        user = session.get(User, link.user_id)
        if user is None:
            raise _invalid_link()
        if user.disabled_at is not None:
            raise ApiError(403, "account_disabled", "this account is disabled")


def _reset(
    sessions: sessionmaker[Session],
    settings: Settings,
    secret: str,
    password_hash: str,
    old_secret: str | None,
) -> tuple[Me, str]:
    with sessions() as session:
        user = redeem_reset_link(session, secret)
        if user is None:  # used by another request meanwhile
            raise _invalid_link()
        if user.disabled_at is not None:
            raise ApiError(403, "account_disabled", "this account is disabled")
        user.password_hash = password_hash
        # Whoever had the account keeps nothing: every session and token goes.
        revoke_credentials(session, user.id)
        return signed_in(session, settings, user, old_secret)


@router.post(
    "/api/auth/reset",
    response_model=Me,
    openapi_extra=json_body_schema(ResetIn),
    responses=error_responses(
        {**_SIGN_IN_ERRORS, **_BUSY, 400: "Link unknown, used or expired"}, retry_after=(503,)
    ),
)
async def reset_password(
    request: Request,
    response: Response,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> Me:
    """Set a password with a reset link's secret: the link is used up, every session of the
    account ends and every personal access token of it is revoked, and this browser is signed
    in. Anyone holding the link; same-site only."""
    check_same_site(request, settings)
    body = await read_json(request, ResetIn)
    try:
        check_new_password(body.password, settings.password_min_length)
    except PasswordError as exc:
        raise ApiError(422, "invalid_password", str(exc), "password") from None
    await run_in_threadpool(_check_link, sessions, body.secret)
    password_hash = await new_password_hash(request, body.password)
    me_, secret = await run_in_threadpool(
        _reset, sessions, settings, body.secret, password_hash, request.cookies.get(COOKIE)
    )
    set_session_cookie(response, secret, settings)
    return me_


def _exchange(sessions: sessionmaker[Session], user_id: int, name: str) -> TokenCreated:
    with sessions() as session:
        try:
            row, secret = issue_token(session, user_id, name)
        except TokenError as exc:
            raise ApiError(409, "token_name_taken", str(exc), "name") from None
        session.commit()
        return TokenCreated(token=token_out(row), secret=secret)


@router.post(
    "/api/auth/token",
    status_code=201,
    response_model=TokenCreated,
    openapi_extra=json_body_schema(TokenExchangeIn),
    responses=error_responses(
        {
            **_SIGN_IN_ERRORS,
            **_BUSY,
            401: "Wrong email or password",
            409: "A token with this name exists",
            429: "Too many failed sign-ins",
        },
        retry_after=(429, 503),
    ),
)
async def exchange_token(
    request: Request,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> TokenCreated:
    """A new personal access token for email and password (what `tj login` calls); the secret
    is in this answer only. Anyone with the credentials, under the sign-in throttle."""
    check_same_site(request, settings)
    body = await read_json(request, TokenExchangeIn)
    user_id = await check_password(request, sessions, settings, body.email, body.password)
    return await run_in_threadpool(_exchange, sessions, user_id, body.name)
