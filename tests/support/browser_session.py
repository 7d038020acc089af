"""A signed-in browser without the sign-in form: a session made in the database, for tests of
pages behind sign-in (the sign-in flow itself is tested through its form)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from playwright.sync_api import Browser, Page
from sqlalchemy.orm import Session, sessionmaker

from app.auth.sessions import COOKIE, start_session
from tests.support.people import People


def session_cookie(sessions: sessionmaker[Session], user_id: int) -> tuple[str, str, str]:
    """(cookie name, cookie value, CSRF token) of a new session of the account."""
    with sessions() as session:
        secret, csrf = start_session(session, user_id, timedelta(hours=1))
        session.commit()
    return COOKIE, secret, csrf


@dataclass
class World:
    """A served app with the people of tests/support/people.py and one assignment."""

    url: str
    sessions: sessionmaker[Session]
    people: People
    assignment: int


def signed_in(
    browser: Browser, world: World, who: str, *, timeout_ms: float = 20_000, downloads: bool = False
) -> Page:
    """A new page of ``who`` signed in on ``world``; ``page.errors`` collects its script errors."""
    name, value, _ = session_cookie(world.sessions, world.people.users[who])
    context = browser.new_context(
        viewport={"width": 1366, "height": 900}, base_url=world.url, accept_downloads=downloads
    )
    context.add_cookies([{"name": name, "value": value, "url": world.url}])
    context.set_default_timeout(timeout_ms)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors  # type: ignore[attr-defined]
    return page
