"""What the accounts API reads and answers."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from app.auth.accounts import EMAIL_PATTERN, MAX_EMAIL
from app.auth.passwords import MAX_PASSWORD_BYTES
from app.auth.tokens import AccountRole

# Characters, checked by the schema; the byte cap and the minimum are checked with a clear
# message by app.auth.passwords.
_PASSWORD = Field(min_length=1, max_length=MAX_PASSWORD_BYTES)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class LoginIn(Strict):
    email: str = Field(min_length=1, max_length=254)
    password: str = _PASSWORD


class TokenExchangeIn(LoginIn):
    """Email and password for a new personal access token (the client's `tj login`)."""

    name: str = Field(default="tj", min_length=1, max_length=100)


class ResetIn(Strict):
    secret: str = Field(min_length=1, max_length=200)
    password: str = _PASSWORD


class MailChoice(Strict):
    optional: StrictBool = Field(
        description="Receive the optional mails: scores published, a regrade changed a score, "
        "deadline reminders."
    )


class SetupIn(Strict):
    secret: str = Field(min_length=1, max_length=200)
    email: str = Field(min_length=3, max_length=320)
    name: str = Field(min_length=1, max_length=200)
    password: str = _PASSWORD


class PasswordChangeIn(Strict):
    current_password: str = _PASSWORD
    new_password: str = _PASSWORD


class TokenCreate(Strict):
    name: str = Field(min_length=1, max_length=100)


class TokenOut(BaseModel):
    id: int
    name: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class SessionOut(BaseModel):
    """A signed-in browser of the account; ``id`` names it to sign it out (it is not the
    cookie, nor what the cookie is looked up by)."""

    id: str
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime
    current: bool


class TokenCreated(BaseModel):
    """The new token; ``secret`` is shown only in this answer."""

    token: TokenOut
    secret: str


class UserAdminOut(UserOut):
    created_at: datetime
    disabled: bool
    has_password: bool
    single_sign_on: bool


class UserPage(BaseModel):
    items: list[UserAdminOut]
    total: int
    offset: int
    limit: int


class UserCreate(Strict):
    email: str = Field(min_length=3, max_length=MAX_EMAIL, pattern=EMAIL_PATTERN)
    name: str = Field(min_length=1, max_length=200)
    role: AccountRole = "member"
    password: str | None = Field(default=None, min_length=1, max_length=MAX_PASSWORD_BYTES)


class UserPatch(Strict):
    role: AccountRole | None = None
    disabled: StrictBool | None = None


class ResetLinkOut(BaseModel):
    """``url`` is a path on this service (``/reset/<secret>``), or a full address when
    GRADER_PUBLIC_URL is set; it works once, until ``expires_at``."""

    url: str
    expires_at: datetime
    mailed: bool
