"""The mail outbox: one row per mail, written in the transaction of the event that sends it.

status: pending (waiting for its next try) | sent | failed (refused with 5xx, or not taken
within GRADER_MAIL_GIVE_UP_HOURS). The bodies are erased once the mail is sent or failed: they
may carry a one-use link, which then lives only in the recipient's mailbox."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class MailOut(Base):
    __tablename__ = "mail_outbox"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    to_address: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(300))
    text_body: Mapped[str | None] = mapped_column(Text, default=None)
    html_body: Mapped[str | None] = mapped_column(Text, default=None)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    course_id: Mapped[int | None] = mapped_column(
        ForeignKey("courses.id", ondelete="CASCADE"), default=None, index=True
    )
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(String(1000), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # What a mail sent once per person is about (e.g. "reminder:assignment:7"): unique per
    # person, so two processes' passes never send the same reminder twice.
    ref: Mapped[str | None] = mapped_column(String(64), default=None)

    __table_args__ = (
        Index("ix_mail_outbox_status_next", "status", "next_attempt_at"),
        UniqueConstraint("user_id", "ref", name="uq_mail_outbox_user_id"),
    )
