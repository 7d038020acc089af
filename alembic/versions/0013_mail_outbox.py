"""The mail outbox (app/mail): every mail, written in the transaction of the event that sends
it, and sent by the mail sender with retries; and each person's choice of the optional mails
(``users.mail_optional``, on for everyone).

Revision ID: 0013_mail_outbox
Revises: 0012_similarity
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_mail_outbox"
down_revision = "0012_similarity"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "mail_outbox",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("to_address", sa.String(320), nullable=False),
        sa.Column("subject", sa.String(300), nullable=False),
        sa.Column("text_body", sa.Text(), nullable=True),
        sa.Column("html_body", sa.Text(), nullable=True),
        sa.Column(
            "user_id",
            AutoId,
            sa.ForeignKey("users.id", ondelete="SET NULL", name="fk_mail_outbox_user_id_users"),
            nullable=True,
        ),
        sa.Column(
            "course_id",
            AutoId,
            sa.ForeignKey(
                "courses.id", ondelete="CASCADE", name="fk_mail_outbox_course_id_courses"
            ),
            nullable=True,
        ),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _ts("next_attempt_at", nullable=False),
        _ts("claimed_until"),
        sa.Column("last_error", sa.String(1000), nullable=True),
        _ts("created_at", nullable=False),
        _ts("sent_at"),
        sa.Column("ref", sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mail_outbox"),
        sa.UniqueConstraint("user_id", "ref", name="uq_mail_outbox_user_id"),
    )
    op.create_index("ix_mail_outbox_status_next", "mail_outbox", ["status", "next_attempt_at"])
    op.create_index("ix_mail_outbox_course_id", "mail_outbox", ["course_id"])
    op.add_column(
        "users",
        sa.Column("mail_optional", sa.Boolean(), server_default=sa.true(), nullable=False),
    )


def downgrade() -> None:
    # In place (SQLite >= 3.35), not a copy-and-rename: that would cascade into every table
    # that refers to users.
    op.drop_column("users", "mail_optional")
    op.drop_table("mail_outbox")
