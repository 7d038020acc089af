"""Checking an email and password, under the sign-in throttle.

Every wrong email or password gets the same answer (no account enumeration): an unknown email
still costs one argon2 verification, and both are recorded as one failure.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from app.auth.accounts import AccountError, find_by_email
from app.auth.models import User
from app.auth.passwords import verify_password
from app.auth.throttle import Limits, record_failure, retry_after
from app.core.config import Settings
from app.core.errors import ApiError

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


def check_password(
    session: Session, settings: Settings, email: str, password: str, address: str
) -> User:
    """The account these credentials open, or an ``ApiError``: 429 while the email or the
    address is throttled (whatever the password), 401 for any wrong email or password, 403 for
    a disabled account with the right password. Commits the failure it records."""
    limits = limits_of(settings)
    wait = retry_after(session, email, address, limits)
    if wait is not None:
        raise throttled(wait)
    try:
        user = find_by_email(session, email)
    except AccountError:
        user = None
    if not verify_password(password, user.password_hash if user is not None else None):
        record_failure(session, email, address, limits)
        session.commit()
        raise invalid_credentials()
    assert user is not None
    if user.disabled_at is not None:
        raise ApiError(403, "account_disabled", "this account is disabled; ask an administrator")
    return user
