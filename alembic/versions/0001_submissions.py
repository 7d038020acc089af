"""Submissions, their grading runs, and their event log.

Revision ID: 0001_submissions
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_submissions"
down_revision = None
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "submissions",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("code_sha256", sa.String(64), nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("request_sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("lease_token", sa.String(36), nullable=True),
        _ts("lease_expires_at"),
        sa.Column("worker", sa.String(200), nullable=True),
        _ts("enqueued_at"),
        sa.Column("test_set_version", sa.Integer(), nullable=True),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("report", sa.Text(), nullable=True),
        _ts("created_at", nullable=False),
        _ts("started_at"),
        _ts("finished_at"),
        sa.PrimaryKeyConstraint("id", name="pk_submissions"),
        sa.UniqueConstraint("client", "idempotency_key", name="uq_submissions_client_idem"),
    )
    op.create_index("ix_submissions_problem_id", "submissions", ["problem_id"])
    op.create_index("ix_submissions_status_created", "submissions", ["status", "created_at"])
    op.create_index("ix_submissions_client_created", "submissions", ["client", "created_at"])

    op.create_table(
        "gradings",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column("submission_id", sa.String(36), nullable=False),
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("test_set_version", sa.Integer(), nullable=True),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("report", sa.Text(), nullable=False),
        sa.Column("worker", sa.String(200), nullable=True),
        _ts("started_at"),
        _ts("finished_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_gradings"),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name="fk_gradings_submission_id_submissions",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("submission_id", "run", name="uq_gradings_submission_run"),
    )
    op.create_index("ix_gradings_submission_id", "gradings", ["submission_id"])

    op.create_table(
        "submission_events",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column("submission_id", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_submission_events"),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name="fk_submission_events_submission_id_submissions",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_submission_events_submission_id", "submission_events", ["submission_id"])


def downgrade() -> None:
    op.drop_table("submission_events")
    op.drop_table("gradings")
    op.drop_table("submissions")
