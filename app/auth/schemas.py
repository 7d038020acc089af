"""What the accounts API answers."""

from __future__ import annotations

from pydantic import BaseModel

from app.auth.tokens import AccountRole


class UserOut(BaseModel):
    id: int
    name: str
    email: str | None
    role: AccountRole


class Me(BaseModel):
    """Who the caller is; ``csrf_token`` is the session's, for the page's state changes (None
    for a bearer token or an anonymous caller)."""

    user: UserOut | None
    csrf_token: str | None
