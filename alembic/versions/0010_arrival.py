"""A submission's arrival time (``submissions.received_at``): when its request's body had
reached the service, the time every date rule and rate window reads. Rows made before this
revision arrived when they were inserted, as far as anyone knows: they get ``created_at``.
The per-client rate window's index moves to the new column.

Revision ID: 0010_arrival
Revises: 0009_course_cases
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_arrival"
down_revision = "0009_course_cases"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: SQLite adds no NOT NULL column in place, and a copy-and-rename of the table
    # would cascade-delete every grading and event. Every row has one from here on.
    op.add_column("submissions", sa.Column("received_at", sa.DateTime(timezone=True)))
    op.execute("UPDATE submissions SET received_at = created_at")
    op.drop_index("ix_submissions_client_created", table_name="submissions")
    op.create_index("ix_submissions_client_received", "submissions", ["client", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_submissions_client_received", table_name="submissions")
    op.create_index("ix_submissions_client_created", "submissions", ["client", "created_at"])
    # In place (SQLite >= 3.35), not a copy-and-rename: see upgrade.
    op.drop_column("submissions", "received_at")
