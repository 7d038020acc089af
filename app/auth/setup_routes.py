"""The first administrator from the printed setup link (``app/auth/first_run.py``)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.accounts import AccountError
from app.auth.first_run import SetupError, check_setup_secret, use_setup_link
from app.auth.http import check_same_site, read_json, set_session_cookie
from app.auth.passwords import PasswordError, check_new_password
from app.auth.routes import signed_in
from app.auth.schemas import Me, SetupIn
from app.auth.signin import new_password_hash
from app.core.bodies import json_body_schema
from app.core.config import Settings
from app.core.deps import SessionsDep, SettingsDep
from app.core.errors import ApiError, error_responses

router = APIRouter(tags=["accounts"])


def _refused(exc: SetupError) -> ApiError:
    return ApiError(404, "invalid_setup_link", str(exc), "secret")


def _check(settings: Settings, secret: str) -> None:
    try:
        check_setup_secret(settings, secret)
    except SetupError as exc:
        raise _refused(exc) from None


def _setup(
    sessions: sessionmaker[Session], settings: Settings, body: SetupIn, password_hash: str
) -> tuple[Me, str]:
    with sessions() as session:
        try:
            user = use_setup_link(
                settings, session, body.secret, body.email, body.name, password_hash
            )
        except SetupError as exc:
            raise _refused(exc) from None
        return signed_in(session, settings, user, None)


@router.post(
    "/api/setup",
    response_model=Me,
    openapi_extra=json_body_schema(SetupIn),
    responses=error_responses(
        {
            400: "Body is not JSON",
            404: "Setup link unknown, used or expired, or an administrator exists",
            403: "Cross-site request",
            413: "Body too large",
            415: "Body is not application/json",
            422: "Invalid body, email or password",
            503: "Too many password hashes at once",
        },
        retry_after=(503,),
    ),
)
async def first_admin(
    request: Request, response: Response, sessions: SessionsDep, settings: SettingsDep
) -> Me:
    """Create the first administrator with the one-time link the server printed at start-up
    (it works once; it creates nothing once an administrator exists) and sign this browser in.
    Anyone holding the link; same-site only."""
    check_same_site(request, settings)
    body = await read_json(request, SetupIn)
    # The link first: without it nothing else about the request is worth an answer.
    await run_in_threadpool(_check, settings, body.secret)  # before any argon2 work
    try:
        check_new_password(body.password, settings.password_min_length)
    except PasswordError as exc:
        raise ApiError(422, "invalid_password", str(exc), "password") from None
    password_hash = await new_password_hash(request, body.password)
    try:
        me, secret = await run_in_threadpool(_setup, sessions, settings, body, password_hash)
    except AccountError as exc:
        raise ApiError(422, "invalid_account", str(exc), "email") from None
    set_session_cookie(response, secret, settings)
    return me
