"""OIDC login initiation's state: kept in the database (a launch needs no third-party cookie
to find it), single use, short-lived, and bound to the browser that started it when that
browser sends the cookie back."""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from app.auth.tokens import digest
from app.db.base import utcnow
from app.lti.launch import LaunchError
from app.lti.models import LtiLogin

BROWSER_COOKIE = "tj_lti"
LOGIN_LIFETIME = timedelta(minutes=5)


def begin(session: Session, platform_id: int) -> tuple[str, str, str]:
    """(state, nonce, browser secret) of a new login; the caller commits."""
    state, nonce, browser = (secrets.token_urlsafe(32) for _ in range(3))
    now = utcnow()
    session.execute(delete(LtiLogin).where(LtiLogin.expires_at < now - LOGIN_LIFETIME))
    session.add(
        LtiLogin(
            id=digest(state),
            platform_id=platform_id,
            browser_sha256=digest(browser),
            nonce=nonce,
            created_at=now,
            expires_at=now + LOGIN_LIFETIME,
        )
    )
    return state, nonce, browser


def claim(
    session: Session, state: str, browser: str | None, require_browser: bool = False
) -> LtiLogin:
    """The login this launch finishes, marked used (committed). Refused when the state is
    unknown, used or expired, or the browser sends another login's cookie. With
    ``require_browser`` (Secure cookies: the binding cookie is SameSite=None, so a browser sends
    it on the platform's cross-site POST) a launch without the cookie is refused too: otherwise
    someone could make a victim's browser post a launch they started (login CSRF). Without it
    (plain HTTP, where a SameSite=Lax cookie never comes back on that POST) the state alone is
    accepted: 256 random bits, single use, five minutes long, bound to the signed nonce."""
    row = session.get(LtiLogin, digest(state))
    now = utcnow()
    if row is None:
        raise LaunchError(400, "invalid_state", "this launch was not started here; launch again")
    if browser is None and require_browser:
        raise LaunchError(
            400, "invalid_state", "this browser did not start this launch; launch again"
        )
    if browser is not None and row.browser_sha256 != digest(browser):
        raise LaunchError(400, "invalid_state", "this launch was started in another browser")
    if row.expires_at <= now:
        raise LaunchError(400, "invalid_state", "this launch took too long; launch again")
    done = session.execute(
        update(LtiLogin)
        .where(LtiLogin.id == row.id, LtiLogin.used_at.is_(None))
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    if not done.rowcount:  # type: ignore[attr-defined]
        raise LaunchError(400, "replayed", "this launch was already used; launch again")
    session.commit()
    return row
