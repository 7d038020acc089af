"""The ``signups`` table: one row per sign-up request (by join code or on an allowed domain).

A request for an address with no account holds the account to be made (name, password hash,
the course it joins) until its one-use link is opened from the mailbox: the account does not
exist before that, so nothing can match, enrol or sign into an address nobody has proved. A
request for an address that has an account holds no password and no link (that person was
mailed a pointer to sign in). Either way the row is what the per-email and per-address rate
limits count, so both cases cost the same and answer the same."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class Signup(Base):
    __tablename__ = "signups"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(254))
    # The client address the request came from (app.core.proxies.client_address).
    address: Mapped[str] = mapped_column(String(100))
    name: Mapped[str] = mapped_column(String(200))
    # NULL: the address had an account when asked (no link was mailed).
    password_hash: Mapped[str | None] = mapped_column(String(255), default=None)
    token_sha256: Mapped[str | None] = mapped_column(String(64), unique=True, default=None)
    # The join code the request came with (NULL: self sign-up). The course is looked up by it
    # again when the link is opened: a code rotated or closed meanwhile joins nobody.
    join_code: Mapped[str | None] = mapped_column(String(32), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    __table_args__ = (
        Index("ix_signups_email_created", "email", "created_at"),
        Index("ix_signups_address_created", "address", "created_at"),
    )
