"""Browser sessions: a random secret in an HttpOnly, SameSite=Lax cookie (Secure in
production), stored only as its SHA-256, with a CSRF token the page sends back in the
``X-CSRF-Token`` header on every request that changes state.

The CSRF token is not in the cookie: the page reads it from ``GET /api/auth/me`` (same-origin
only), so another site that makes the browser send the cookie cannot know it.
"""

from __future__ import annotations

import hmac
import secrets
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.auth.models import User, WebSession
from app.auth.tokens import Principal, digest, principal_of
from app.db.base import utcnow

COOKIE = "tj_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# A session's last_seen_at is written at most this often, so reads do not all write.
TOUCH_EVERY = timedelta(minutes=5)


def start_session(session: Session, user_id: int, lifetime: timedelta) -> tuple[str, str]:
    """A new session of the account: (cookie secret, CSRF token). The caller commits."""
    secret = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        WebSession(
            id=digest(secret),
            user_id=user_id,
            csrf_token=csrf,
            created_at=now,
            expires_at=now + lifetime,
            last_seen_at=now,
        )
    )
    session.flush()
    return secret, csrf


def end_session(session: Session, secret: str) -> None:
    session.execute(delete(WebSession).where(WebSession.id == digest(secret)))


def end_all_sessions(session: Session, user_id: int) -> None:
    """Signs the account out everywhere (a password change or reset does this)."""
    session.execute(delete(WebSession).where(WebSession.user_id == user_id))


def session_principal(session: Session, secret: str) -> tuple[Principal, str] | None:
    """The live session's account and its CSRF token, or None (unknown, expired, disabled)."""
    found = session.execute(
        select(WebSession, User)
        .join(User, User.id == WebSession.user_id)
        .where(WebSession.id == digest(secret))
    ).first()
    if found is None:
        return None
    row, user = found
    now = utcnow()
    if row.expires_at <= now or user.disabled_at is not None:
        return None
    if now - row.last_seen_at > TOUCH_EVERY:
        row.last_seen_at = now
        session.commit()
    return principal_of(user), row.csrf_token


def csrf_ok(expected: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(expected, presented)
