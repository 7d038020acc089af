"""Accounts API: who is calling."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.deps import OptionalPrincipal
from app.auth.models import User
from app.auth.schemas import Me, UserOut
from app.auth.sessions import COOKIE, session_principal
from app.core.deps import SessionsDep

router = APIRouter(tags=["accounts"])


def _me(sessions: sessionmaker[Session], user_id: int, secret: str | None) -> Me:
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        found = session_principal(session, secret) if secret else None
        csrf = found[1] if found is not None and found[0].user_id == user_id else None
        return Me(
            user=UserOut(id=user.id, name=user.name, email=user.email, role=user.role),
            csrf_token=csrf,
        )


@router.get(
    "/api/auth/me",
    response_model=Me,
)
async def me(request: Request, principal: OptionalPrincipal, sessions: SessionsDep) -> Me:
    """The signed-in account (None when anonymous) and the session's CSRF token."""
    if principal is None:
        return Me(user=None, csrf_token=None)
    secret = None if principal.token_id is not None else request.cookies.get(COOKIE)
    return await run_in_threadpool(_me, sessions, principal.user_id, secret)
