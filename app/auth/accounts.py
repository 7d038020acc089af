"""Accounts: finding and creating them, and one-use links to set a password.

Other packages (rosters, single sign-on) make accounts only through here, so an email is always
normalised the same way and nobody is created twice.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from app.auth.models import PasswordReset, User
from app.auth.tokens import AccountRole, digest
from app.db.base import utcnow

RESET_LINK_LIFETIME = timedelta(days=7)
MAX_EMAIL = 254
# The shape normalize_email accepts (it also trims and lower-cases), for the schemas of the
# bodies that carry an address: documented, so clients and generated requests know it.
EMAIL_PATTERN = r"^\s*[^@\s]+@[^@\s]+\.[^@\s]+\s*$"


class AccountError(ValueError):
    pass


def normalize_email(email: str) -> str:
    """Trimmed and lower-cased; a clear error for what cannot be an address."""
    email = email.strip().lower()
    local, at, domain = email.partition("@")
    if not at or not local or "." not in domain or len(email) > MAX_EMAIL or " " in email:
        raise AccountError(f"{email!r} is not an email address")
    return email


def person_matches(q: str) -> ColumnElement[bool]:
    """Accounts whose name or email contains ``q`` (any case): a search box's condition."""
    # Escaped: a "_" in an email is a character to find, not LIKE's wildcard.
    text = q.strip().lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{text}%"
    return func.lower(User.name).like(pattern, escape="\\") | User.email.like(pattern, escape="\\")


def find_by_email(session: Session, email: str) -> User | None:
    return session.scalars(select(User).where(User.email == normalize_email(email))).first()


def create_user(
    session: Session,
    email: str | None,
    name: str,
    role: AccountRole = "member",
    password_hash: str | None = None,
    created_by_course: int | None = None,
) -> User:
    """A new account; the caller commits. An email already in use is an ``AccountError``.
    ``created_by_course``: the course whose enrolment makes it (see ``User``)."""
    address = normalize_email(email) if email is not None else None
    if address is not None and find_by_email(session, address) is not None:
        raise AccountError(f"an account with {address} already exists")
    name = name.strip() or (address or "")
    if not 1 <= len(name) <= 200:
        raise AccountError("a name must be 1 to 200 characters")
    user = User(
        email=address,
        name=name,
        role=role,
        password_hash=password_hash,
        created_by_course_id=created_by_course,
    )
    session.add(user)
    session.flush()
    return user


def find_or_create(
    session: Session, email: str, name: str, created_by_course: int | None = None
) -> tuple[User, bool]:
    """The account with this email, or a new member account; True when it was created."""
    found = find_by_email(session, email)
    if found is not None:
        return found, False
    return create_user(session, email, name, created_by_course=created_by_course), True


def issue_reset_link(session: Session, user_id: int, created_by: int | None) -> str:
    """A one-use secret for ``/reset/<secret>`` that sets the account's password; only its
    digest is stored. The caller commits and shows the link to whoever asked for it."""
    secret = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        PasswordReset(
            user_id=user_id,
            token_sha256=digest(secret),
            created_by=created_by,
            created_at=now,
            expires_at=now + RESET_LINK_LIFETIME,
        )
    )
    session.flush()
    return secret


def live_reset_link(session: Session, secret: str) -> PasswordReset | None:
    """The link with this secret while it may still be used; None for an unknown, used or
    expired one."""
    row = session.scalars(
        select(PasswordReset).where(PasswordReset.token_sha256 == digest(secret))
    ).first()
    if row is None or row.used_at is not None or row.expires_at <= utcnow():
        return None
    return row


def redeem_reset_link(session: Session, secret: str) -> User | None:
    """The account a live link belongs to, marking the link used; None for an unknown, used or
    expired link. The caller sets the password and commits."""
    row = live_reset_link(session, secret)
    if row is None:
        return None
    row.used_at = utcnow()
    return session.get(User, row.user_id)
