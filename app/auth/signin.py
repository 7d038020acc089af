"""Checking an email and password, under the sign-in throttle and the argon2 slots.

Every wrong email or password gets the same answer (no account enumeration): an unknown email
still costs one argon2 verification, and both are recorded as one failure.

The order matters: the attempt is recorded (app.auth.throttle) before anything is verified, so
concurrent guesses are counted against each other; only then does the request wait for an
argon2 slot (app.auth.hashing_slots), holding no database connection and no thread. A request
turned away for want of a slot verified nothing and is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from app.auth.accounts import AccountError, find_by_email
from app.auth.hashing_slots import BUSY_RETRY_AFTER, Busy, slots_of
from app.auth.passwords import hash_password, verify_password
from app.auth.throttle import Limits, claim_attempt, forget_attempt
from app.core.config import Settings
from app.core.errors import ApiError
from app.core.proxies import client_address

INVALID_MESSAGE = "wrong email or password"


def limits_of(settings: Settings) -> Limits:
    return Limits(
        window=timedelta(seconds=settings.login_window_seconds),
        per_email=settings.login_max_failures_per_email,
        per_address=settings.login_max_failures_per_address,
    )


def invalid_credentials() -> ApiError:
    return ApiError(401, "invalid_credentials", INVALID_MESSAGE, None)


def throttled(seconds: int) -> ApiError:
    return ApiError(
        429,
        "too_many_attempts",
        f"too many failed sign-ins; try again in {seconds} s",
        None,
        headers={"Retry-After": str(seconds)},
    )


def busy() -> ApiError:
    return ApiError(
        503,
        "busy",
        f"too many sign-ins at once; try again in {BUSY_RETRY_AFTER} s",
        None,
        headers={"Retry-After": str(BUSY_RETRY_AFTER)},
    )


@dataclass(frozen=True)
class _Claim:
    """An attempt recorded and within the limits, and what its password is checked against."""

    attempt_id: int
    user_id: int | None
    stored_hash: str | None
    disabled: bool


def _claim(sessions: sessionmaker[Session], settings: Settings, email: str, address: str) -> _Claim:
    limits = limits_of(settings)
    with sessions() as session:
        attempt_id, wait = claim_attempt(session, email, address, limits)
        if attempt_id is None:
            assert wait is not None
            raise throttled(wait)
        try:
            user = find_by_email(session, email)
        except AccountError:
            user = None
        if user is None:
            return _Claim(attempt_id, None, None, False)
        return _Claim(attempt_id, user.id, user.password_hash, user.disabled_at is not None)


def _forget(sessions: sessionmaker[Session], attempt_id: int) -> None:
    with sessions() as session:
        forget_attempt(session, attempt_id)


async def check_password(
    request: Request,
    sessions: sessionmaker[Session],
    settings: Settings,
    email: str,
    password: str,
) -> int:
    """The id of the account these credentials open, or an ``ApiError``: 429 while the email or
    the request's client address is throttled (whatever the password), 503 when no argon2 slot
    freed in time, 401 for any wrong email or password, 403 for a disabled account with the
    right password."""
    address = client_address(request, settings)
    claim = await run_in_threadpool(_claim, sessions, settings, email, address)
    try:
        right = await slots_of(request).run(verify_password, password, claim.stored_hash)
    except Busy:
        await run_in_threadpool(_forget, sessions, claim.attempt_id)
        raise busy() from None
    if not right:
        raise invalid_credentials()  # the attempt stays recorded: a failure
    await run_in_threadpool(_forget, sessions, claim.attempt_id)
    assert claim.user_id is not None
    if claim.disabled:
        raise ApiError(403, "account_disabled", "this account is disabled; ask an administrator")
    return claim.user_id


async def new_password_hash(request: Request, password: str) -> str:
    """``password``'s argon2 hash, computed in a slot (503 ``busy`` when none freed in time)."""
    try:
        return await slots_of(request).run(hash_password, password)
    except Busy:
        raise busy() from None
