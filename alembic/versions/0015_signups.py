"""Sign-up requests (app/signup): joining by code without an account, and self sign-up, each
held until the address is verified.

Revision ID: 0015_signups
Revises: 0014_feedback
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_signups"
down_revision = "0014_feedback"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "signups",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("address", sa.String(100), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=True),
        sa.Column("token_sha256", sa.String(64), nullable=True),
        sa.Column("join_code", sa.String(32), nullable=True),
        _ts("created_at", nullable=False),
        _ts("expires_at", nullable=False),
        _ts("used_at"),
        sa.PrimaryKeyConstraint("id", name="pk_signups"),
        sa.UniqueConstraint("token_sha256", name="uq_signups_token_sha256"),
    )
    op.create_index("ix_signups_email_created", "signups", ["email", "created_at"])
    op.create_index("ix_signups_address_created", "signups", ["address", "created_at"])


def downgrade() -> None:
    op.drop_table("signups")
