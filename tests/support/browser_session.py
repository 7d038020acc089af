"""A signed-in browser without the sign-in form: a session made in the database, for tests of
pages behind sign-in (the sign-in flow itself is tested through its form)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.auth.sessions import COOKIE, start_session


def session_cookie(sessions: sessionmaker[Session], user_id: int) -> tuple[str, str, str]:
    """(cookie name, cookie value, CSRF token) of a new session of the account."""
    with sessions() as session:
        secret, csrf = start_session(session, user_id, timedelta(hours=1))
        session.commit()
    return COOKIE, secret, csrf
