"""LTI 1.3 Advantage: registered platforms and deployments, the tool's signing keys, logins
under way, what LMS courses, people and links map to, line items (one per assignment and LMS
course: a unique constraint) and the score outbox.

Revision ID: 0007_lti
Revises: 0006_oidc_logins
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_lti"
down_revision = "0006_oidc_logins"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _id() -> sa.Column[object]:
    return sa.Column("id", AutoId, autoincrement=True, nullable=False)


def _fk(name: str, target: str) -> sa.Column[object]:
    return sa.Column(name, AutoId, sa.ForeignKey(target, ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "lti_platforms",
        _id(),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("issuer", sa.String(500), nullable=False),
        sa.Column("client_id", sa.String(255), nullable=False),
        sa.Column("auth_login_url", sa.String(1000), nullable=False),
        sa.Column("auth_token_url", sa.String(1000), nullable=False),
        sa.Column("keyset_url", sa.String(1000), nullable=False),
        sa.Column("token_audience", sa.String(1000), nullable=True),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_lti_platforms"),
        sa.UniqueConstraint("issuer", "client_id", name="uq_lti_platforms_client"),
    )
    op.create_table(
        "lti_deployments",
        _id(),
        _fk("platform_id", "lti_platforms.id"),
        sa.Column("deployment_id", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_lti_deployments"),
        sa.UniqueConstraint("platform_id", "deployment_id", name="uq_lti_deployments_platform_id"),
    )
    op.create_table(
        "lti_keys",
        sa.Column("kid", sa.String(64), nullable=False),
        sa.Column("private_pem", sa.Text(), nullable=False),
        _ts("created_at", nullable=False),
        _ts("retired_at"),
        sa.PrimaryKeyConstraint("kid", name="pk_lti_keys"),
    )
    op.create_table(
        "lti_logins",
        sa.Column("id", sa.String(64), nullable=False),
        _fk("platform_id", "lti_platforms.id"),
        sa.Column("browser_sha256", sa.String(64), nullable=False),
        sa.Column("nonce", sa.String(64), nullable=False),
        _ts("created_at", nullable=False),
        _ts("expires_at", nullable=False),
        _ts("used_at"),
        sa.PrimaryKeyConstraint("id", name="pk_lti_logins"),
    )
    op.create_table(
        "lti_contexts",
        _id(),
        _fk("platform_id", "lti_platforms.id"),
        sa.Column("context_id", sa.String(255), nullable=False),
        _fk("course_id", "courses.id"),
        sa.Column("deployment_id", sa.String(255), nullable=False),
        sa.Column("lineitems_url", sa.String(1000), nullable=True),
        sa.Column("memberships_url", sa.String(1000), nullable=True),
        sa.Column("ags_scopes", sa.Text(), nullable=False),
        _ts("roster_synced_at"),
        sa.PrimaryKeyConstraint("id", name="pk_lti_contexts"),
        sa.UniqueConstraint("platform_id", "context_id", name="uq_lti_contexts_platform_context"),
    )
    op.create_table(
        "lti_users",
        _id(),
        _fk("platform_id", "lti_platforms.id"),
        sa.Column("subject", sa.String(255), nullable=False),
        _fk("user_id", "users.id"),
        sa.PrimaryKeyConstraint("id", name="pk_lti_users"),
        sa.UniqueConstraint("platform_id", "subject", name="uq_lti_users_platform_subject"),
    )
    op.create_index("ix_lti_users_user_id", "lti_users", ["user_id"])
    op.create_table(
        "lti_line_items",
        _id(),
        _fk("context_id", "lti_contexts.id"),
        _fk("assignment_id", "assignments.id"),
        sa.Column("url", sa.String(1000), nullable=True),
        _ts("claimed_until"),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_lti_line_items"),
        sa.UniqueConstraint("context_id", "assignment_id", name="uq_lti_line_items_assignment"),
    )
    op.create_index("ix_lti_line_items_assignment", "lti_line_items", ["assignment_id"])
    op.create_table(
        "lti_deep_links",
        sa.Column("id", sa.String(64), nullable=False),
        _fk("context_id", "lti_contexts.id"),
        _fk("user_id", "users.id"),
        sa.Column("return_url", sa.String(1000), nullable=False),
        sa.Column("data", sa.Text(), nullable=True),
        _ts("expires_at", nullable=False),
        _ts("used_at"),
        sa.PrimaryKeyConstraint("id", name="pk_lti_deep_links"),
    )
    op.create_table(
        "lti_score_outbox",
        _id(),
        _fk("line_item_id", "lti_line_items.id"),
        _fk("user_id", "users.id"),
        sa.Column("submission_id", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        _ts("next_attempt_at", nullable=False),
        _ts("claimed_until"),
        sa.Column("last_error", sa.String(1000), nullable=True),
        sa.Column("score_given", sa.Float(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("sent_at"),
        sa.PrimaryKeyConstraint("id", name="pk_lti_score_outbox"),
    )
    op.create_index(
        "ix_lti_score_outbox_status_next", "lti_score_outbox", ["status", "next_attempt_at"]
    )


def downgrade() -> None:
    for table in (
        "lti_score_outbox",
        "lti_deep_links",
        "lti_line_items",
        "lti_users",
        "lti_contexts",
        "lti_logins",
        "lti_keys",
        "lti_deployments",
        "lti_platforms",
    ):
        op.drop_table(table)
