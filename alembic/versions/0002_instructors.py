"""Instructors: API tokens, stored test cases, and each problem's test-set version.

Revision ID: 0002_instructors
Revises: 0001_submissions
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_instructors"
down_revision = "0001_submissions"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        _ts("created_at", nullable=False),
        _ts("revoked_at"),
        sa.PrimaryKeyConstraint("id", name="pk_api_tokens"),
        sa.UniqueConstraint("name", name="uq_api_tokens_name"),
        sa.UniqueConstraint("token_sha256", name="uq_api_tokens_token_sha256"),
    )

    op.create_table(
        "test_cases",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("visibility", sa.String(8), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("inputs_npz", sa.LargeBinary(), nullable=False),
        sa.Column("expected_npy", sa.LargeBinary(), nullable=False),
        sa.Column("warnings", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(100), nullable=True),
        _ts("created_at", nullable=False),
        sa.Column("added_in_version", sa.Integer(), nullable=False),
        sa.Column("removed_in_version", sa.Integer(), nullable=True),
        _ts("removed_at"),
        sa.PrimaryKeyConstraint("id", name="pk_test_cases"),
    )
    op.create_index("ix_test_cases_problem_id", "test_cases", ["problem_id"])
    live = sa.text("removed_in_version IS NULL")
    op.create_index(
        "uq_test_cases_live_name",
        "test_cases",
        ["problem_id", "name"],
        unique=True,
        sqlite_where=live,
        postgresql_where=live,
    )

    op.create_table(
        "problem_test_sets",
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        _ts("updated_at", nullable=False),
        sa.PrimaryKeyConstraint("problem_id", name="pk_problem_test_sets"),
    )


def downgrade() -> None:
    op.drop_table("problem_test_sets")
    op.drop_index("uq_test_cases_live_name", table_name="test_cases")
    op.drop_index("ix_test_cases_problem_id", table_name="test_cases")
    op.drop_table("test_cases")
    op.drop_table("api_tokens")
