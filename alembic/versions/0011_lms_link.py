"""One course whether it starts on the web or in the LMS (issue 38): an LMS course waits for
its instructor to link it to a course here (``lti_pending_links``); a platform is trusted to
match people by email only when an administrator says so (``lti_platforms.trust_email``); a
person's LMS identity is linked to their existing account once (``lti_users.linked_at``,
``lti_identity_links``).

Revision ID: 0011_lms_link
Revises: 0010_arrival
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_lms_link"
down_revision = "0010_arrival"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column(
        "lti_platforms",
        sa.Column("trust_email", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("lti_users", sa.Column("linked_at", sa.DateTime(timezone=True)))
    op.create_table(
        "lti_pending_links",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "platform_id",
            AutoId,
            sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("claims", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "lti_identity_links",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "lti_user_id",
            AutoId,
            sa.ForeignKey("lti_users.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("destination", sa.String(1000), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True)),
    )


def downgrade() -> None:
    op.drop_table("lti_identity_links")
    op.drop_table("lti_pending_links")
    # In place (SQLite >= 3.35), not a copy-and-rename, which would cascade to the children.
    op.drop_column("lti_users", "linked_at")
    op.drop_column("lti_platforms", "trust_email")
