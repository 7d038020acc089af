"""Feedback: ``feedback_texts`` (a comment the student reads and a note only staff read, on a
student's problem or on one submission; append-only, the newest row per target and kind is in
force) and ``diagnosis_hints`` (a course's text for one diagnosis of one problem, read by every
student whose latest graded attempt has it); ``courses.default_points`` (what a problem added
without points is worth; existing courses get 10, the web form's default).

Revision ID: 0014_feedback
Revises: 0013_mail_outbox
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_feedback"
down_revision = "0013_mail_outbox"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _user_fk(name: str, nullable: bool, ondelete: str) -> sa.Column[object]:
    return sa.Column(name, AutoId, sa.ForeignKey("users.id", ondelete=ondelete), nullable=nullable)


def upgrade() -> None:
    # In place (a NOT NULL column with a default), not a copy-and-rename of the table: that
    # would cascade-delete every membership and assignment on SQLite.
    op.add_column(
        "courses",
        sa.Column("default_points", sa.Float(), nullable=False, server_default=sa.text("10")),
    )
    op.create_table(
        "feedback_texts",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column(
            "assignment_id",
            AutoId,
            sa.ForeignKey("assignments.id", ondelete="CASCADE"),
            nullable=False,
        ),
        _user_fk("user_id", False, "CASCADE"),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column(
            "submission_id",
            sa.String(36),
            sa.ForeignKey("submissions.id", ondelete="CASCADE"),
            nullable=True,
        ),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        _user_fk("created_by", True, "SET NULL"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_feedback_texts"),
    )
    op.create_index(
        "ix_feedback_texts_target", "feedback_texts", ["assignment_id", "user_id", "problem_id"]
    )
    op.create_table(
        "diagnosis_hints",
        sa.Column("id", AutoId, autoincrement=True, nullable=False),
        sa.Column(
            "course_id", AutoId, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("code", sa.String(128), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        _user_fk("updated_by", True, "SET NULL"),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_diagnosis_hints"),
        sa.UniqueConstraint("course_id", "problem_id", "code", name="uq_diagnosis_hints_target"),
    )


def downgrade() -> None:
    op.drop_table("diagnosis_hints")
    op.drop_index("ix_feedback_texts_target", table_name="feedback_texts")
    op.drop_table("feedback_texts")
    op.drop_column("courses", "default_points")
