"""People and how they prove who they are: accounts, personal access tokens, browser sessions,
password-reset links and the failed sign-ins that throttle guessing.

Secrets are never stored: a token, a session cookie or a reset link is 256 random bits, kept
only as its SHA-256; a password only as its argon2 hash.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class User(Base):
    """An account. ``role`` is the deployment-wide role: ``admin`` (everything), ``instructor``
    (may create courses and edit the public catalog's test cases) or ``member`` (everyone else).
    What a person may do in a course is their membership's role there."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    # Lower-cased; NULL for an account made only to hold tokens (`python -m app tokens`).
    email: Mapped[str | None] = mapped_column(String(254), unique=True, default=None)
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16), default="member")  # member|instructor|admin
    password_hash: Mapped[str | None] = mapped_column(String(255), default=None)
    # Single sign-on: the identity provider's issuer and subject of this person.
    oidc_issuer: Mapped[str | None] = mapped_column(String(500), default=None)
    oidc_subject: Mapped[str | None] = mapped_column(String(255), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # The course whose enrolment made this account (by email or roster CSV); NULL when made
    # anywhere else (an admin, the CLI, single sign-on, an LMS). Only that course's
    # instructors may give it its first password link (app.courses.tenancy). No foreign key:
    # courses are never deleted, and accounts sit below courses.
    created_by_course_id: Mapped[int | None] = mapped_column(Integer, default=None)
    # The optional mails (scores published, a regrade changed a score, deadline reminders);
    # the person turns them off on their account page. Invitations, password links and
    # extensions granted are always sent.
    mail_optional: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())

    __table_args__ = (
        UniqueConstraint("oidc_issuer", "oidc_subject", name="uq_users_oidc_identity"),
    )


class ApiToken(Base):
    """A personal access token of an account (the client, scripts, `python -m app tokens`)."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    __table_args__ = (UniqueConstraint("user_id", "name", name="uq_api_tokens_user_name"),)


class WebSession(Base):
    """A signed-in browser. The cookie holds the secret; ``id`` is its SHA-256."""

    __tablename__ = "web_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    # Sent back by the page in a header on every state-changing request.
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class PasswordReset(Base):
    """A one-use link to set a password, issued by staff or an admin (no mail server needed)."""

    __tablename__ = "password_resets"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_by: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)


class LoginFailure(Base):
    """One failed sign-in, by the email tried and by the address it came from."""

    __tablename__ = "login_failures"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(254))
    address: Mapped[str] = mapped_column(String(100))
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        Index("ix_login_failures_email_at", "email", "at"),
        Index("ix_login_failures_address_at", "address", "at"),
    )


class OidcLogin(Base):
    """A single sign-on round trip under way: what the callback needs to check the provider's
    answer. ``id`` is the SHA-256 of the ``state`` sent to the provider; ``browser_sha256`` that
    of a short-lived cookie, so only the browser that started it can finish it; ``used_at``
    makes it single use."""

    __tablename__ = "oidc_logins"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    browser_sha256: Mapped[str] = mapped_column(String(64))
    nonce: Mapped[str] = mapped_column(String(64))
    code_verifier: Mapped[str] = mapped_column(String(128))
    next_path: Mapped[str] = mapped_column(String(500), default="/")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
