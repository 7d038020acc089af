"""Sign-in throttling: sign-in attempts counted per email and per client address over a window.

An attempt is counted before its password is checked, in one transaction that records it and
counts the others: a burst of concurrent guesses can no longer all read the count before any
of them is written (thirty concurrent wrong passwords for one email used to all be verified).
That transaction is serialized with every other one touching the same email or address: on
SQLite by the database's single writer (the row is inserted first, which takes the write lock,
then the others are counted); on PostgreSQL by transaction-scoped advisory locks on the email
and the address, taken in a fixed order so two attempts never wait on each other in a cycle.
So exactly ``limit`` attempts pass, whatever the interleaving.

An attempt counts as a failure until its password proves right; then it is forgotten (a
success counts for nothing, and clears nothing else). A success clears nothing: an attacker who
can sign into an account of their own must not be able to reset the count of the address or
email they are guessing against. A refused attempt is not recorded at all, so guessing while a
limit is reached cannot stretch the lock-out of the real owner beyond one window after the last
counted failure.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.exc import OperationalError
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


def wait_seconds(
    times: list[datetime], limit: int, window: timedelta, now: datetime
) -> float | None:
    """Seconds until fewer than ``limit`` of ``times`` (ascending, all within the window) are
    left in it; None when the limit is not reached."""
    if len(times) < limit:
        return None
    expires = times[len(times) - limit] + window
    return max(1.0, (expires - now).total_seconds())


def _purge(session: Session, limits: Limits, now: datetime) -> None:
    """Forgets failures too old to matter, in a transaction of its own."""
    try:
        session.execute(delete(LoginFailure).where(LoginFailure.at <= now - limits.window))
        session.commit()
    except OperationalError:
        # Concurrent purges of the same old rows may deadlock on PostgreSQL: one gives up,
        # the rows go with a later attempt.
        session.rollback()


def _lock_key(kind: str, value: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{kind}:{value}".encode()).digest()[:8], signed=True)


def lock_keys(session: Session, *keys: tuple[str, str]) -> None:
    """PostgreSQL: transaction-scoped advisory locks on each (kind, value), taken in a fixed
    order so two transactions never wait on each other in a cycle. SQLite: nothing (its single
    writer serializes whoever inserts first)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for key in sorted({_lock_key(kind, value) for kind, value in keys}):
        session.execute(select(func.pg_advisory_xact_lock(key)))


def claim_attempt(
    session: Session, email: str, address: str, limits: Limits
) -> tuple[int | None, int | None]:
    """Counts one attempt before its password is checked: ``(attempt id, None)`` when it is
    within both limits (recorded as a failure and committed), ``(None, seconds to wait)`` when
    the email or the address has reached its limit (nothing recorded)."""
    now = utcnow()
    _purge(session, limits, now)
    email_key, address_key = _key(email), address[:100]
    lock_keys(session, ("email", email_key), ("address", address_key))
    # On SQLite this insert takes the database's write lock: the count below sees every
    # attempt committed before, and none can commit until this transaction ends.
    row = LoginFailure(email=email_key, address=address_key, at=now)
    session.add(row)
    session.flush()
    waits = []
    for column, value, limit in (
        (LoginFailure.email, email_key, limits.per_email),
        (LoginFailure.address, address_key, limits.per_address),
    ):
        times = list(
            session.scalars(
                select(LoginFailure.at)
                .where(column == value, LoginFailure.at > now - limits.window)
                .where(LoginFailure.id != row.id)
                .order_by(LoginFailure.at)
            )
        )
        wait = wait_seconds(times, limit, limits.window, now)
        if wait is not None:
            waits.append(wait)
    if waits:
        session.rollback()
        return None, math.ceil(max(waits))
    attempt_id = row.id
    session.commit()  # ends the transaction: no lock or connection is held while verifying
    return attempt_id, None


def forget_attempt(session: Session, attempt_id: int) -> None:
    """A successful or turned-away attempt is no failure; commits."""
    session.execute(delete(LoginFailure).where(LoginFailure.id == attempt_id))
    session.commit()
