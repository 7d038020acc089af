"""Creating, listing, revoking and checking API tokens.

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
from typing import Literal

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.models import ApiToken
from app.db.base import utcnow

Role = Literal["instructor", "admin"]
ROLES: tuple[Role, ...] = ("instructor", "admin")
TOKEN_PREFIX = "tj_"


class TokenError(ValueError):
    pass


@dataclass(frozen=True)
class Principal:
    """Who made an authenticated request."""

    token_id: int
    name: str
    role: Role


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def create_token(session: Session, name: str, role: str) -> tuple[ApiToken, str]:
    """Store a new token and return it with its secret; the caller commits."""
    if role not in ROLES:
        raise TokenError(f"role must be one of {list(ROLES)}, not {role!r}")
    name = name.strip()
    if not 1 <= len(name) <= 100:
        raise TokenError("name must be 1 to 100 characters")
    secret = new_secret()
    row = ApiToken(name=name, role=role, token_sha256=digest(secret), created_at=utcnow())
    session.add(row)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise TokenError(f"a token named {name!r} already exists") from None
    return row, secret


def list_tokens(session: Session) -> Sequence[ApiToken]:
    return session.scalars(select(ApiToken).order_by(ApiToken.id)).all()


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
    """The live token's principal, or None for an unknown or revoked token."""
    presented = digest(token)
    row = session.scalars(select(ApiToken).where(ApiToken.token_sha256 == presented)).first()
    if row is None or not hmac.compare_digest(row.token_sha256, presented):
        return None
    if row.revoked_at is not None or row.role not in ROLES:
        return None
    role: Role = "admin" if row.role == "admin" else "instructor"
    return Principal(token_id=row.id, name=row.name, role=role)
