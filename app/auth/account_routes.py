"""Accounts API, the signed-in person's own account: personal access tokens, signed-in
sessions and password."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.deps import CurrentUser
from app.auth.http import read_json
from app.auth.models import ApiToken, User
from app.auth.passwords import PasswordError, check_new_password
from app.auth.schemas import (
    MailChoice,
    PasswordChangeIn,
    SessionOut,
    TokenCreate,
    TokenCreated,
    TokenOut,
)
from app.auth.sessions import (
    COOKIE,
    end_session_by_handle,
    list_sessions,
    revoke_credentials,
    session_handle,
)
from app.auth.signin import check_password, new_password_hash
from app.auth.tokens import TokenError, digest, issue_token, list_tokens, revoke_token
from app.auth.views import token_out
from app.core.bodies import json_body_schema
from app.core.deps import SessionsDep, SettingsDep
from app.core.errors import ApiError, error_responses

router = APIRouter(tags=["accounts"])

_BODY_ERRORS = {
    400: "Body is not JSON",
    413: "Body too large",
    415: "Body is not application/json",
    422: "Invalid body",
}


def _list(sessions: sessionmaker[Session], user_id: int) -> list[TokenOut]:
    with sessions() as session:
        return [token_out(row) for row, _ in list_tokens(session, user_id)]


@router.get(
    "/api/account/tokens",
    response_model=list[TokenOut],
    responses=error_responses({}),
)
async def my_tokens(principal: CurrentUser, sessions: SessionsDep) -> list[TokenOut]:
    """The caller's own personal access tokens (never their secrets). Any signed-in account."""
    return await run_in_threadpool(_list, sessions, principal.user_id)


def _create(sessions: sessionmaker[Session], user_id: int, name: str) -> TokenCreated:
    with sessions() as session:
        try:
            row, secret = issue_token(session, user_id, name)
        except TokenError as exc:
            raise ApiError(409, "token_name_taken", str(exc), "name") from None
        session.commit()
        return TokenCreated(token=token_out(row), secret=secret)


@router.post(
    "/api/account/tokens",
    status_code=201,
    response_model=TokenCreated,
    openapi_extra=json_body_schema(TokenCreate),
    responses=error_responses({**_BODY_ERRORS, 409: "A token of yours has this name"}),
)
async def create_my_token(
    request: Request, principal: CurrentUser, sessions: SessionsDep
) -> TokenCreated:
    """A new personal access token of the caller; its secret is in this answer only. Any
    signed-in account."""
    body = await read_json(request, TokenCreate)
    return await run_in_threadpool(_create, sessions, principal.user_id, body.name)


def _revoke(sessions: sessionmaker[Session], user_id: int, token_id: int) -> bool:
    with sessions() as session:
        owner = session.scalar(select(ApiToken.user_id).where(ApiToken.id == token_id))
        if owner != user_id:
            return False  # another person's token is as unknown as a missing one
        done = revoke_token(session, token_id=token_id)
        session.commit()
        return done


@router.delete(
    "/api/account/tokens/{token_id}",
    status_code=204,
    response_class=Response,
    responses=error_responses({404: "No live token of yours with this id"}),
)
async def revoke_my_token(
    token_id: Annotated[int, Path(ge=1, le=2**53, description="The token's id.")],
    principal: CurrentUser,
    sessions: SessionsDep,
) -> Response:
    """Revoke one of the caller's own tokens; it is refused from the next request on. Any
    signed-in account, its own tokens only."""
    if not await run_in_threadpool(_revoke, sessions, principal.user_id, token_id):
        raise ApiError(404, "not_found", f"you have no live token {token_id}", "token_id")
    return Response(status_code=204)


def _sessions(
    sessions: sessionmaker[Session], user_id: int, current: str | None
) -> list[SessionOut]:
    mine = digest(current) if current else None
    with sessions() as session:
        return [
            SessionOut(
                id=session_handle(row),
                created_at=row.created_at,
                last_seen_at=row.last_seen_at,
                expires_at=row.expires_at,
                current=row.id == mine,
            )
            for row in list_sessions(session, user_id)
        ]


@router.get(
    "/api/account/sessions",
    response_model=list[SessionOut],
    responses=error_responses({}),
)
async def my_sessions(
    request: Request, principal: CurrentUser, sessions: SessionsDep
) -> list[SessionOut]:
    """The caller's signed-in browsers (``current``: the one asking). Any signed-in account."""
    current = request.cookies.get(COOKIE) if principal.token_id is None else None
    return await run_in_threadpool(_sessions, sessions, principal.user_id, current)


def _end_session(sessions: sessionmaker[Session], user_id: int, handle: str) -> bool:
    with sessions() as session:
        done = end_session_by_handle(session, user_id, handle)
        session.commit()
        return done


@router.delete(
    "/api/account/sessions/{session_id}",
    status_code=204,
    response_class=Response,
    responses=error_responses({404: "No live session of yours with this id"}),
)
async def end_my_session(
    session_id: str, principal: CurrentUser, sessions: SessionsDep
) -> Response:
    """Sign one of the caller's sessions out (this one too, if named). Any signed-in account,
    its own sessions only."""
    if not await run_in_threadpool(_end_session, sessions, principal.user_id, session_id[:64]):
        raise ApiError(404, "not_found", "you have no live session with this id", "session_id")
    return Response(status_code=204)


def _password_of(sessions: sessionmaker[Session], user_id: int) -> str:
    """The email the account signs in with; 409 when it has no password to change."""
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        if user.email is None or user.password_hash is None:
            raise ApiError(
                409,
                "no_password",
                "this account has no password to change; ask for a reset link",
            )
        return user.email


def _set_password(
    sessions: sessionmaker[Session],
    user_id: int,
    password_hash: str,
    keep_session: str | None,
    keep_token_id: int | None,
) -> None:
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        user.password_hash = password_hash
        revoke_credentials(session, user_id, keep_session=keep_session, keep_token_id=keep_token_id)
        session.commit()


@router.put(
    "/api/account/password",
    status_code=204,
    response_class=Response,
    openapi_extra=json_body_schema(PasswordChangeIn),
    responses=error_responses(
        {
            **_BODY_ERRORS,
            401: "No credentials, or the current password is wrong",
            409: "The account has no password",
            429: "Too many failed sign-ins",
            503: "Too many sign-ins or password changes at once",
        },
        retry_after=(429, 503),
    ),
)
async def change_password(
    request: Request,
    principal: CurrentUser,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> Response:
    """Change the caller's password (the current one is needed): every other session of the
    account ends and every other personal access token is revoked; the session or token that
    made the change stays. Any signed-in account with a password."""
    body = await read_json(request, PasswordChangeIn)
    try:
        check_new_password(body.new_password, settings.password_min_length)
    except PasswordError as exc:
        raise ApiError(422, "invalid_password", str(exc), "new_password") from None
    email = await run_in_threadpool(_password_of, sessions, principal.user_id)
    # Under the sign-in throttle too: a stolen session must not become a password oracle.
    await check_password(request, sessions, settings, email, body.current_password)
    password_hash = await new_password_hash(request, body.new_password)
    keep = request.cookies.get(COOKIE) if principal.token_id is None else None
    await run_in_threadpool(
        _set_password, sessions, principal.user_id, password_hash, keep, principal.token_id
    )
    return Response(status_code=204)


def _mail_choice(
    sessions: sessionmaker[Session], user_id: int, optional: bool | None
) -> MailChoice:
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        if optional is not None:
            user.mail_optional = optional
            session.commit()
        return MailChoice(optional=user.mail_optional)


@router.get("/api/account/mail", response_model=MailChoice, responses=error_responses({}))
async def mail_choice(principal: CurrentUser, sessions: SessionsDep) -> MailChoice:
    """Whether the caller receives the optional mails (scores published, a regrade changed a
    score, deadline reminders). Any signed-in account."""
    return await run_in_threadpool(_mail_choice, sessions, principal.user_id, None)


@router.put(
    "/api/account/mail",
    response_model=MailChoice,
    openapi_extra=json_body_schema(MailChoice),
    responses=error_responses(_BODY_ERRORS),
)
async def set_mail_choice(
    request: Request, principal: CurrentUser, sessions: SessionsDep
) -> MailChoice:
    """Turn the optional mails on or off; invitations, password links and extensions granted
    are always sent. Any signed-in account."""
    body = await read_json(request, MailChoice)
    return await run_in_threadpool(_mail_choice, sessions, principal.user_id, body.optional)
