"""Single sign-on: the round trips under way (state, nonce, PKCE verifier, the browser that
started each), so a callback is accepted once, from that browser, while it is fresh.

Revision ID: 0006_oidc_logins
Revises: 0005_courses
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_oidc_logins"
down_revision = "0005_courses"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oidc_logins",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("browser_sha256", sa.String(64), nullable=False),
        sa.Column("nonce", sa.String(64), nullable=False),
        sa.Column("code_verifier", sa.String(128), nullable=False),
        sa.Column("next_path", sa.String(500), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_oidc_logins"),
    )


def downgrade() -> None:
    op.drop_table("oidc_logins")
