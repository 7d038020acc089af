"""Stored test cases get an owner: ``test_cases.course_id`` (NULL: the catalog's, the
administrators'; else the course whose assignments alone it grades). Every existing case becomes
a catalog case with its id, so every submission is graded as before. Live names are unique per
scope (two partial indexes); across scopes the service keeps them apart.

Downgrading deletes the courses' own cases: the schema before cannot keep them from grading
every course.

Revision ID: 0009_course_cases
Revises: 0008_account_origin
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_course_cases"
down_revision = "0008_account_origin"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_LIVE = "removed_in_version IS NULL"
_CATALOG_LIVE = sa.text(f"{_LIVE} AND course_id IS NULL")
_COURSE_LIVE = sa.text(f"{_LIVE} AND course_id IS NOT NULL")


def upgrade() -> None:
    # Dropped before the batch: SQLite recreates the table (nothing refers to it, so the copy
    # keeps every row and id) and would otherwise carry the old partial index over.
    op.drop_index("uq_test_cases_live_name", table_name="test_cases")
    with op.batch_alter_table("test_cases") as batch:
        batch.add_column(sa.Column("course_id", AutoId, nullable=True))
        batch.create_foreign_key(
            "fk_test_cases_course_id_courses",
            "courses",
            ["course_id"],
            ["id"],
            ondelete="CASCADE",
        )
    op.create_index("ix_test_cases_course_id", "test_cases", ["course_id"])
    op.create_index(
        "uq_test_cases_live_name",
        "test_cases",
        ["problem_id", "name"],
        unique=True,
        sqlite_where=_CATALOG_LIVE,
        postgresql_where=_CATALOG_LIVE,
    )
    op.create_index(
        "uq_test_cases_course_live_name",
        "test_cases",
        ["problem_id", "course_id", "name"],
        unique=True,
        sqlite_where=_COURSE_LIVE,
        postgresql_where=_COURSE_LIVE,
    )


def downgrade() -> None:
    op.drop_index("uq_test_cases_course_live_name", table_name="test_cases")
    op.drop_index("uq_test_cases_live_name", table_name="test_cases")
    op.drop_index("ix_test_cases_course_id", table_name="test_cases")
    op.execute(sa.text("DELETE FROM test_cases WHERE course_id IS NOT NULL"))
    with op.batch_alter_table("test_cases") as batch:
        batch.drop_constraint("fk_test_cases_course_id_courses", type_="foreignkey")
        batch.drop_column("course_id")
    live = sa.text(_LIVE)
    op.create_index(
        "uq_test_cases_live_name",
        "test_cases",
        ["problem_id", "name"],
        unique=True,
        sqlite_where=live,
        postgresql_where=live,
    )
