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

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.auth.models import ApiToken, User, WebSession
from app.auth.tokens import Principal, digest, principal_of
from app.db.base import utcnow
from app.db.engine import spare_write_turn

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
    """Signs the account out everywhere (disabling an account does this)."""
    session.execute(delete(WebSession).where(WebSession.user_id == user_id))


def revoke_credentials(
    session: Session,
    user_id: int,
    *,
    keep_session: str | None = None,
    keep_token_id: int | None = None,
) -> None:
    """What a new password does: every session of the account ends and every personal access
    token is revoked, so whoever held the account before keeps nothing of it; only the
    credential that changed the password (its session's cookie secret, or its token) stays.
    The caller commits."""
    ends = delete(WebSession).where(WebSession.user_id == user_id)
    if keep_session is not None:
        ends = ends.where(WebSession.id != digest(keep_session))
    session.execute(ends)
    revokes = update(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
    if keep_token_id is not None:
        revokes = revokes.where(ApiToken.id != keep_token_id)
    session.execute(
        revokes.values(revoked_at=utcnow()).execution_options(synchronize_session=False)
    )


def session_handle(row: WebSession) -> str:
    """A session's name on the account page: derived from the stored digest, so neither it nor
    the page ever shows what the cookie lookup uses."""
    return digest(row.id)[:32]


def end_session_by_handle(session: Session, user_id: int, handle: str) -> bool:
    """Ends the account's session named ``handle`` (``session_handle``); False if it has none
    by that name. The caller commits."""
    for row in list_sessions(session, user_id):
        if hmac.compare_digest(session_handle(row), handle):
            session.delete(row)
            return True
    return False


def list_sessions(session: Session, user_id: int) -> list[WebSession]:
    """The account's live sessions, newest first."""
    return list(
        session.scalars(
            select(WebSession)
            .where(WebSession.user_id == user_id, WebSession.expires_at > utcnow())
            .order_by(WebSession.created_at.desc())
        )
    )


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
        # Skipped while other writers of this process are busy (a deadline's inserts): the
        # next request writes it.
        with spare_write_turn(session.get_bind()) as spare:
            if spare:
                row.last_seen_at = now
                session.commit()
    return principal_of(user), row.csrf_token


def csrf_ok(expected: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(expected, presented)
