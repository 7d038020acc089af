"""Fair queue: at most one running submission per client, refused by the database itself, and
each submission's round (``turn``) among its client's, in which free workers serve clients.

Revision ID: 0004_fair_queue
Revises: 0003_event_seq
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_fair_queue"
down_revision = "0003_event_seq"
branch_labels = None
depends_on = None

RUNNING = sa.text("status = 'running'")


def upgrade() -> None:
    # Rows queued before this revision all get round 0: they are served oldest first, as before.
    op.add_column(
        "submissions",
        sa.Column("turn", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    )
    op.create_index("ix_submissions_status_turn", "submissions", ["status", "turn", "created_at"])
    # Rows graded side by side before this revision: all but one per client go back to the
    # queue (their worker's lease-guarded writes then store nothing, and they are graded
    # again), or the index could not be built.
    op.execute(
        """
        UPDATE submissions
        SET status = 'queued', lease_token = NULL, lease_expires_at = NULL, enqueued_at = NULL
        WHERE status = 'running' AND EXISTS (
            SELECT 1 FROM submissions AS other
            WHERE other.client = submissions.client AND other.status = 'running'
              AND other.id < submissions.id
        )
        """
    )
    op.create_index(
        "uq_submissions_running_client",
        "submissions",
        ["client"],
        unique=True,
        sqlite_where=RUNNING,
        postgresql_where=RUNNING,
    )


def downgrade() -> None:
    op.drop_index("uq_submissions_running_client", table_name="submissions")
    op.drop_index("ix_submissions_status_turn", table_name="submissions")
    # Not a batch (copy-and-rename) on SQLite: dropping the old table would cascade to every
    # event of every submission. SQLite drops an unindexed column in place since 3.35.
    op.drop_column("submissions", "turn")
