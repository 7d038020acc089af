"""An LMS roster member whose email is that of an existing member of the linked course, on a
platform not trusted for email, waits to be linked on their first launch instead of getting a
second account (issue 38): ``lti_pending_members``.

Revision ID: 0016_lti_pending_members
Revises: 0015_signups
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_lti_pending_members"
down_revision = "0015_signups"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "lti_pending_members",
        sa.Column("id", AutoId, primary_key=True, autoincrement=True),
        sa.Column(
            "platform_id",
            AutoId,
            sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column(
            "context_id",
            AutoId,
            sa.ForeignKey("lti_contexts.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("user_id", AutoId, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("platform_id", "subject", name="uq_lti_pending_members_subject"),
    )
    op.create_index("ix_lti_pending_members_user_id", "lti_pending_members", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_lti_pending_members_user_id", "lti_pending_members")
    op.drop_table("lti_pending_members")
