"""Similarity reports: one row per assignment problem, the background job and its ranked pairs.

Revision ID: 0012_similarity
Revises: 0011_lms_link
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_similarity"
down_revision = "0011_lms_link"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "similarity_reports",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column(
            "assignment_id",
            AutoId,
            sa.ForeignKey("assignments.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column(
            "requested_by", AutoId, sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True
        ),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("students", sa.Integer(), nullable=False),
        sa.Column("error", sa.String(1000), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_similarity_reports"),
        sa.UniqueConstraint("assignment_id", "problem_id", name="uq_similarity_reports_problem"),
    )
    op.create_index(
        "ix_similarity_reports_status", "similarity_reports", ["status", "claimed_until"]
    )


def downgrade() -> None:
    op.drop_index("ix_similarity_reports_status", table_name="similarity_reports")
    op.drop_table("similarity_reports")
