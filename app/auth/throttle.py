"""Sign-in throttling: failed sign-ins counted per email and per client address over a window.

A success clears nothing: an attacker who can sign into an account of their own must not be
able to reset the count of the address or email they are guessing against. While a limit is
reached no failure is recorded, so guessing cannot stretch the lock-out of the real owner
beyond one window after the last counted failure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.auth.models import LoginFailure
from app.db.base import utcnow

MAX_KEY = 254


@dataclass(frozen=True)
class Limits:
    window: timedelta
    per_email: int
    per_address: int


def _key(value: str) -> str:
    return value.strip().lower()[:MAX_KEY]


def _wait(times: list[datetime], limit: int, window: timedelta, now: datetime) -> float | None:
    """Seconds until fewer than ``limit`` of ``times`` (ascending, all within the window) are
    left in it; None when the limit is not reached."""
    if len(times) < limit:
        return None
    expires = times[len(times) - limit] + window
    return max(1.0, (expires - now).total_seconds())


def retry_after(session: Session, email: str, address: str, limits: Limits) -> int | None:
    """Seconds to wait when either the email or the address has reached its limit, else None."""
    now = utcnow()
    since = now - limits.window
    waits = []
    for column, value, limit in (
        (LoginFailure.email, _key(email), limits.per_email),
        (LoginFailure.address, address[:100], limits.per_address),
    ):
        times = list(
            session.scalars(
                select(LoginFailure.at)
                .where(column == value, LoginFailure.at > since)
                .order_by(LoginFailure.at)
            )
        )
        wait = _wait(times, limit, limits.window, now)
        if wait is not None:
            waits.append(wait)
    return math.ceil(max(waits)) if waits else None


def record_failure(session: Session, email: str, address: str, limits: Limits) -> None:
    """Counts one failure (and forgets those too old to matter); the caller commits."""
    now = utcnow()
    session.execute(delete(LoginFailure).where(LoginFailure.at <= now - limits.window))
    session.add(LoginFailure(email=_key(email), address=address[:100], at=now))
