"""Events numbered per submission: ``submission_events.seq`` (1, 2, 3... within a submission),
unique with ``submission_id``; existing events are numbered in the order they were written.

Revision ID: 0003_event_seq
Revises: 0002_instructors
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_event_seq"
down_revision = "0002_instructors"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("submission_events", sa.Column("seq", sa.Integer(), nullable=True))
    # A correlated count rather than a window function: the same statement on both databases.
    op.execute(
        "UPDATE submission_events SET seq = ("
        " SELECT COUNT(*) FROM submission_events AS earlier"
        " WHERE earlier.submission_id = submission_events.submission_id"
        " AND earlier.id <= submission_events.id)"
    )
    with op.batch_alter_table("submission_events") as batch:
        batch.alter_column("seq", existing_type=sa.Integer(), nullable=False)
        batch.create_unique_constraint(
            "uq_submission_events_submission_seq", ["submission_id", "seq"]
        )


def downgrade() -> None:
    with op.batch_alter_table("submission_events") as batch:
        batch.drop_constraint("uq_submission_events_submission_seq", type_="unique")
        batch.drop_column("seq")
