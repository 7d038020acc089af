"""Accounts API for administrators: create, list, change and disable accounts, and issue
password-reset links."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.accounts import (
    RESET_LINK_LIFETIME,
    AccountError,
    create_user,
    issue_reset_link,
    person_matches,
)
from app.auth.deps import Admin
from app.auth.http import read_json
from app.auth.models import User
from app.auth.passwords import PasswordError, check_new_password
from app.auth.schemas import ResetLinkOut, UserAdminOut, UserCreate, UserPage, UserPatch
from app.auth.sessions import end_all_sessions
from app.auth.signin import new_password_hash
from app.auth.views import user_admin_out
from app.core.bodies import json_body_schema
from app.core.config import Settings
from app.core.deps import SessionsDep, SettingsDep, site_url
from app.core.errors import ApiError, error_responses
from app.db.base import utcnow
from app.mail.messages import RESET, reset_message
from app.mail.outbox import enqueue

router = APIRouter(tags=["admin"])

_BODY_ERRORS = {
    400: "Body is not JSON",
    413: "Body too large",
    415: "Body is not application/json",
    422: "Invalid body",
}
MAX_PAGE = 200
# Bounded like every id in a path: a larger number is a 422, not an integer SQLite cannot bind.
AccountId = Annotated[int, Path(ge=1, le=2**53, description="The account's id.")]


def _no_user(user_id: int) -> ApiError:
    return ApiError(404, "not_found", f"no account {user_id}", "user_id")


def _create(
    sessions: sessionmaker[Session], body: UserCreate, password_hash: str | None
) -> UserAdminOut:
    with sessions() as session:
        try:
            user = create_user(session, body.email, body.name, body.role, password_hash)
        except AccountError as exc:
            status = 409 if "already exists" in str(exc) else 422
            raise ApiError(status, "invalid_account", str(exc), "email") from None
        session.commit()
        return user_admin_out(user)


@router.post(
    "/api/admin/users",
    status_code=201,
    response_model=UserAdminOut,
    openapi_extra=json_body_schema(UserCreate),
    responses=error_responses(
        {**_BODY_ERRORS, 409: "Email in use", 503: "Too many password hashes at once"},
        retry_after=(503,),
    ),
)
async def create_account(
    request: Request,
    admin: Admin,
    sessions: SessionsDep,
    settings: SettingsDep,
) -> UserAdminOut:
    """Create an account (with a password, or without one: then issue a reset link).
    Administrators only."""
    body = await read_json(request, UserCreate)
    password_hash = None
    if body.password is not None:
        try:
            check_new_password(body.password, settings.password_min_length)
        except PasswordError as exc:
            raise ApiError(422, "invalid_password", str(exc), "password") from None
        password_hash = await new_password_hash(request, body.password)
    return await run_in_threadpool(_create, sessions, body, password_hash)


def _page(sessions: sessionmaker[Session], offset: int, limit: int, q: str | None) -> UserPage:
    found = select(User)
    if q and q.strip():
        found = found.where(person_matches(q))
    with sessions() as session:
        total = session.scalar(select(func.count()).select_from(found.subquery())) or 0
        rows = session.scalars(found.order_by(User.id).offset(offset).limit(limit))
        return UserPage(
            items=[user_admin_out(u) for u in rows], total=total, offset=offset, limit=limit
        )


@router.get("/api/admin/users", response_model=UserPage, responses=error_responses({}))
async def list_accounts(
    admin: Admin,
    sessions: SessionsDep,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    q: Annotated[
        str | None,
        Query(max_length=200, description="Only accounts whose name or email contains this."),
    ] = None,
) -> UserPage:
    """Every account (or those ``q`` finds), oldest first, a page at a time. Administrators
    only."""
    return await run_in_threadpool(_page, sessions, offset, limit, q)


def _patch(
    sessions: sessionmaker[Session], admin_id: int, user_id: int, body: UserPatch
) -> UserAdminOut:
    with sessions() as session:
        user = session.get(User, user_id)
        if user is None:
            raise _no_user(user_id)
        if user_id == admin_id and (
            (body.role is not None and body.role != "admin") or body.disabled
        ):
            # The last administrator could otherwise lock everyone out of this page.
            raise ApiError(409, "own_account", "you cannot demote or disable yourself", "user_id")
        if body.role is not None:
            user.role = body.role
        if body.disabled is not None:
            user.disabled_at = (user.disabled_at or utcnow()) if body.disabled else None
            if body.disabled:
                end_all_sessions(session, user_id)
        session.commit()
        return user_admin_out(user)


@router.patch(
    "/api/admin/users/{user_id}",
    response_model=UserAdminOut,
    openapi_extra=json_body_schema(UserPatch),
    responses=error_responses({**_BODY_ERRORS, 404: "No such account", 409: "Your own account"}),
)
async def change_account(
    user_id: AccountId, request: Request, admin: Admin, sessions: SessionsDep
) -> UserAdminOut:
    """Change an account's deployment role or disable it (a disabled account's sessions end
    and its tokens are refused at once). Administrators only, never on themselves."""
    body = await read_json(request, UserPatch)
    return await run_in_threadpool(_patch, sessions, admin.user_id, user_id, body)


def _reset_link(
    sessions: sessionmaker[Session],
    settings: Settings,
    base: str,
    admin_id: int,
    user_id: int,
    mail: bool,
) -> ResetLinkOut:
    with sessions() as session:
        user = session.get(User, user_id)
        if user is None:
            raise _no_user(user_id)
        if mail and user.email is None:
            raise ApiError(409, "no_email", "this account has no email to mail the link to")
        secret = issue_reset_link(session, user_id, admin_id)
        path = f"/reset/{secret}"
        url = f"{settings.public_url.rstrip('/')}{path}" if settings.public_url else path
        if mail:
            assert user.email is not None
            # In the link's own transaction: mailed if and only if the link exists.
            # The site's address (GRADER_PUBLIC_URL, else the request's): a path alone in a
            # mail is no link.
            message = reset_message(user.name, f"{base}{path}")
            enqueue(session, RESET, user.email, message, user_id=user_id)
        session.commit()
        return ResetLinkOut(url=url, expires_at=utcnow() + RESET_LINK_LIFETIME, mailed=mail)


@router.post(
    "/api/admin/users/{user_id}/reset-link",
    status_code=201,
    response_model=ResetLinkOut,
    responses=error_responses({404: "No such account", 409: "No email to mail"}),
)
async def reset_link(
    request: Request,
    user_id: AccountId,
    admin: Admin,
    sessions: SessionsDep,
    settings: SettingsDep,
    mail: Annotated[
        bool, Query(description="Also mail it to the account's email (through the mail outbox).")
    ] = False,
) -> ResetLinkOut:
    """A one-use link to set the account's password, valid 7 days; pass it on to the person
    (or ``?mail=true``). Administrators only."""
    base = site_url(request, settings)
    return await run_in_threadpool(
        _reset_link, sessions, settings, base, admin.user_id, user_id, mail
    )
