"""Accounts remember the course whose enrolment made them (``users.created_by_course_id``):
only that course's instructors may give such an account its first password link, and only
until someone has used it (issue 35).

Accounts made before this revision are attributed to a course only where nothing else can
have made or used them: a member account in exactly one course (in any status), with no
password, single sign-on identity, LMS identity or token. Every other account stays NULL: its
password links are an administrator's.

Revision ID: 0008_account_origin
Revises: 0007_lti
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_account_origin"
down_revision = "0007_lti"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("users", sa.Column("created_by_course_id", sa.Integer(), nullable=True))
    op.execute(
        """
        UPDATE users SET created_by_course_id = (
            SELECT MIN(m.course_id) FROM course_members AS m WHERE m.user_id = users.id
        )
        WHERE role = 'member' AND password_hash IS NULL AND oidc_issuer IS NULL
          AND (SELECT COUNT(*) FROM course_members AS m WHERE m.user_id = users.id) = 1
          AND NOT EXISTS (SELECT 1 FROM api_tokens AS t WHERE t.user_id = users.id)
          AND NOT EXISTS (SELECT 1 FROM lti_users AS l WHERE l.user_id = users.id)
        """
    )


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("created_by_course_id")
