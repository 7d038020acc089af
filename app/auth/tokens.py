"""Creating, listing, revoking and checking API tokens (personal access tokens of accounts).

A token is 256 random bits (``secrets``), so an unsalted SHA-256 is enough to store it: there is
no dictionary to attack. Lookup is by the digest (an indexed column), and the stored digest is
compared with ``hmac.compare_digest`` as well, so no comparison on the secret leaks timing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.models import ApiToken, User
from app.db.base import utcnow
from app.db.engine import spare_write_turn

# Deployment-wide roles of an account; what it may do in a course is its membership's role.
AccountRole = Literal["member", "instructor", "admin"]
ACCOUNT_ROLES: tuple[AccountRole, ...] = ("member", "instructor", "admin")
# The roles `python -m app tokens create` gives the account it makes.
Role = Literal["instructor", "admin"]
ROLES: tuple[Role, ...] = ("instructor", "admin")
TOKEN_PREFIX = "tj_"
LAST_USED_EVERY = timedelta(minutes=5)


class TokenError(ValueError):
    pass


@dataclass(frozen=True)
class Principal:
    """Who made an authenticated request: an account, by a token or a browser session."""

    user_id: int
    name: str
    role: AccountRole
    # The token the request carried; None when it came with a browser session.
    token_id: int | None = None

    @property
    def is_instructor(self) -> bool:
        """May create courses and read the catalog's hidden cases; changing the catalog is the
        admins' (who may do everything)."""
        return self.role in ("instructor", "admin")

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_token(session: Session, name: str, role: str) -> tuple[ApiToken, str]:
    """A new account named ``name`` with ``role`` and its token (named like it), as
    `python -m app tokens create` makes them; the caller commits. Names stay unique among
    tokens, so `tokens revoke <name>` names one."""
    if role not in ROLES:
        raise TokenError(f"role must be one of {list(ROLES)}, not {role!r}")
    name = name.strip()
    if not 1 <= len(name) <= 100:
        raise TokenError("name must be 1 to 100 characters")
    if session.scalars(select(ApiToken.id).where(ApiToken.name == name)).first() is not None:
        raise TokenError(f"a token named {name!r} already exists")
    user = User(name=name, role=role, created_at=utcnow())
    session.add(user)
    session.flush()
    return issue_token(session, user.id, name)


def issue_token(session: Session, user_id: int, name: str) -> tuple[ApiToken, str]:
    """A new personal access token of an account, and its secret; the caller commits."""
    name = name.strip()
    if not 1 <= len(name) <= 100:
        raise TokenError("name must be 1 to 100 characters")
    secret = new_secret()
    row = ApiToken(user_id=user_id, name=name, token_sha256=digest(secret), created_at=utcnow())
    session.add(row)
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:
        raise TokenError(f"a token named {name!r} already exists") from None
    return row, secret


def list_tokens(session: Session, user_id: int | None = None) -> Sequence[tuple[ApiToken, User]]:
    """Every token with its account (one account's when ``user_id`` is given)."""
    stmt = select(ApiToken, User).join(User, User.id == ApiToken.user_id).order_by(ApiToken.id)
    if user_id is not None:
        stmt = stmt.where(ApiToken.user_id == user_id)
    return [(token, user) for token, user in session.execute(stmt).all()]


def revoke_token(session: Session, *, token_id: int | None = None, name: str | None = None) -> bool:
    """Revoke by id or name; False if no such live token. The caller commits."""
    stmt = update(ApiToken).where(ApiToken.revoked_at.is_(None))
    if token_id is not None:
        stmt = stmt.where(ApiToken.id == token_id)
    elif name is not None:
        stmt = stmt.where(ApiToken.name == name)
    else:
        raise TokenError("give a token id or a name")
    result = session.execute(
        stmt.values(revoked_at=utcnow()).execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def authenticate(session: Session, token: str) -> Principal | None:
    """The live token's account, or None for an unknown or revoked token or a disabled
    account."""
    presented = digest(token)
    found = session.execute(
        select(ApiToken, User)
        .join(User, User.id == ApiToken.user_id)
        .where(ApiToken.token_sha256 == presented)
    ).first()
    if found is None:
        return None
    row, user = found
    if not hmac.compare_digest(row.token_sha256, presented):
        return None
    if row.revoked_at is not None or user.disabled_at is not None:
        return None
    now = utcnow()
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_EVERY:
        # Shown on the account page so a person can tell a forgotten token from a live one;
        # written at most this often, so reads do not all write.
        # Skipped while other writers of this process are busy (a deadline's inserts): the
        # next request writes it.
        with spare_write_turn(session.get_bind()) as spare:
            if spare:
                row.last_used_at = now
                session.commit()
    return principal_of(user, token_id=row.id)


def principal_of(user: User, token_id: int | None = None) -> Principal:
    role: AccountRole = user.role if user.role in ACCOUNT_ROLES else "member"
    return Principal(user_id=user.id, name=user.name, role=role, token_id=token_id)
