"""Courses: accounts, sessions, courses and rosters, assignments, overrides and the gradebook's
audit log; submissions gain their account, assignment and graded attempt.

Every existing API token becomes the token of an account of the same name and role, so
`python -m app tokens` keeps working and stored test cases keep their author. Existing
submissions stay as they are: anonymous practice.

Revision ID: 0005_courses
Revises: 0004_fair_queue
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_courses"
down_revision = "0004_fair_queue"
branch_labels = None
depends_on = None

AutoId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = True) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _id() -> sa.Column[object]:
    return sa.Column("id", AutoId, autoincrement=True, nullable=False)


def _user_fk(name: str, nullable: bool, ondelete: str) -> sa.Column[object]:
    return sa.Column(name, AutoId, sa.ForeignKey("users.id", ondelete=ondelete), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "users",
        _id(),
        sa.Column("email", sa.String(254), nullable=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=True),
        sa.Column("oidc_issuer", sa.String(500), nullable=True),
        sa.Column("oidc_subject", sa.String(255), nullable=True),
        _ts("created_at", nullable=False),
        _ts("disabled_at"),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("email", name="uq_users_email"),
        sa.UniqueConstraint("oidc_issuer", "oidc_subject", name="uq_users_oidc_identity"),
    )
    _tokens_to_accounts()
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(64), nullable=False),
        _user_fk("user_id", False, "CASCADE"),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        _ts("created_at", nullable=False),
        _ts("expires_at", nullable=False),
        _ts("last_seen_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_web_sessions"),
    )
    op.create_index("ix_web_sessions_user_id", "web_sessions", ["user_id"])
    op.create_table(
        "password_resets",
        _id(),
        _user_fk("user_id", False, "CASCADE"),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        _user_fk("created_by", True, "SET NULL"),
        _ts("created_at", nullable=False),
        _ts("expires_at", nullable=False),
        _ts("used_at"),
        sa.PrimaryKeyConstraint("id", name="pk_password_resets"),
        sa.UniqueConstraint("token_sha256", name="uq_password_resets_token_sha256"),
    )
    op.create_index("ix_password_resets_user_id", "password_resets", ["user_id"])
    op.create_table(
        "login_failures",
        _id(),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("address", sa.String(100), nullable=False),
        _ts("at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_login_failures"),
    )
    op.create_index("ix_login_failures_email_at", "login_failures", ["email", "at"])
    op.create_index("ix_login_failures_address_at", "login_failures", ["address", "at"])

    op.create_table(
        "courses",
        _id(),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("join_code", sa.String(32), nullable=True),
        _user_fk("created_by", True, "SET NULL"),
        _ts("created_at", nullable=False),
        _ts("archived_at"),
        sa.PrimaryKeyConstraint("id", name="pk_courses"),
        sa.UniqueConstraint("join_code", name="uq_courses_join_code"),
    )
    op.create_table(
        "course_members",
        _id(),
        sa.Column(
            "course_id", AutoId, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False
        ),
        _user_fk("user_id", False, "CASCADE"),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("section", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_course_members"),
        sa.UniqueConstraint("course_id", "user_id", name="uq_course_members_course_user"),
    )
    op.create_index("ix_course_members_user_id", "course_members", ["user_id"])
    op.create_index("ix_course_members_course_role", "course_members", ["course_id", "role"])

    op.create_table(
        "assignments",
        _id(),
        sa.Column(
            "course_id", AutoId, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("title", sa.String(200), nullable=False),
        _ts("release_at"),
        _ts("due_at", nullable=False),
        sa.Column("late_deadlines", sa.Text(), nullable=False),
        sa.Column("after_close", sa.String(16), nullable=False),
        sa.Column("scoring", sa.String(8), nullable=False),
        sa.Column("feedback", sa.String(16), nullable=False),
        _ts("feedback_published_at"),
        sa.Column("hide_scores", sa.Boolean(), nullable=False),
        _ts("scores_published_at"),
        sa.Column("max_attempts", sa.Integer(), nullable=True),
        sa.Column("attempt_penalties", sa.Text(), nullable=False),
        sa.Column("rate_limit", sa.Integer(), nullable=True),
        sa.Column("rate_window_seconds", sa.Integer(), nullable=False),
        sa.Column("per_student_cases", sa.Boolean(), nullable=False),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_assignments"),
        sa.CheckConstraint(
            "after_close IN ('closed', 'practice')", name="ck_assignments_after_close"
        ),
        sa.CheckConstraint("scoring IN ('best', 'last')", name="ck_assignments_scoring"),
        sa.CheckConstraint(
            "feedback IN ('visible', 'summary', 'after_due_date', 'hidden')",
            name="ck_assignments_feedback",
        ),
    )
    op.create_index("ix_assignments_course_id", "assignments", ["course_id"])
    assignment_fk = sa.ForeignKey("assignments.id", ondelete="CASCADE")
    op.create_table(
        "assignment_problems",
        _id(),
        sa.Column("assignment_id", AutoId, assignment_fk, nullable=False),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("points", sa.Float(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("feedback", sa.String(16), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_assignment_problems"),
        sa.UniqueConstraint("assignment_id", "problem_id", name="uq_assignment_problems_problem"),
    )
    op.create_index(
        "ix_assignment_problems_assignment_id", "assignment_problems", ["assignment_id"]
    )
    op.create_table(
        "assignment_overrides",
        _id(),
        sa.Column(
            "assignment_id",
            AutoId,
            sa.ForeignKey("assignments.id", ondelete="CASCADE"),
            nullable=False,
        ),
        _user_fk("user_id", True, "CASCADE"),
        sa.Column("section", sa.String(64), nullable=True),
        _ts("until"),
        sa.Column("credit", sa.Float(), nullable=False),
        sa.Column("extra_attempts", sa.Integer(), nullable=False),
        sa.Column("note", sa.String(500), nullable=False),
        _user_fk("created_by", True, "SET NULL"),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_assignment_overrides"),
        sa.CheckConstraint(
            "(user_id IS NULL) <> (section IS NULL)", name="ck_assignment_overrides_one_target"
        ),
    )
    op.create_index(
        "ix_assignment_overrides_assignment_id", "assignment_overrides", ["assignment_id"]
    )
    op.create_table(
        "grade_adjustments",
        _id(),
        sa.Column(
            "assignment_id",
            AutoId,
            sa.ForeignKey("assignments.id", ondelete="CASCADE"),
            nullable=False,
        ),
        _user_fk("user_id", False, "CASCADE"),
        sa.Column("problem_id", sa.String(128), nullable=False),
        sa.Column("old_score", sa.Float(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("comment", sa.String(1000), nullable=False),
        _user_fk("created_by", True, "SET NULL"),
        _ts("created_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_grade_adjustments"),
    )
    op.create_index(
        "ix_grade_adjustments_target",
        "grade_adjustments",
        ["assignment_id", "user_id", "problem_id"],
    )

    # Not a batch on SQLite (a copy-and-rename would cascade-delete every event): nullable
    # columns are added in place; SQLite then cannot add their foreign keys, which the models
    # still declare (PostgreSQL gets them).
    with op.batch_alter_table("submissions", recreate="never") as batch:
        batch.add_column(sa.Column("user_id", AutoId, nullable=True))
        batch.add_column(sa.Column("assignment_id", AutoId, nullable=True))
        batch.add_column(sa.Column("graded_attempt", sa.Integer(), nullable=True))
    if op.get_bind().dialect.name != "sqlite":
        op.create_foreign_key(
            "fk_submissions_user_id_users",
            "submissions",
            "users",
            ["user_id"],
            ["id"],
            ondelete="SET NULL",
        )
        op.create_foreign_key(
            "fk_submissions_assignment_id_assignments",
            "submissions",
            "assignments",
            ["assignment_id"],
            ["id"],
            ondelete="SET NULL",
        )
    op.create_index("ix_submissions_user_id", "submissions", ["user_id"])
    op.create_index(
        "ix_submissions_assignment_user",
        "submissions",
        ["assignment_id", "user_id", "problem_id"],
    )
    attempted = sa.text("graded_attempt IS NOT NULL")
    op.create_index(
        "uq_submissions_graded_attempt",
        "submissions",
        ["assignment_id", "user_id", "problem_id", "graded_attempt"],
        unique=True,
        sqlite_where=attempted,
        postgresql_where=attempted,
    )


def _tokens_to_accounts() -> None:
    """Give every token an account named like it, with its role, then drop the token's role."""
    bind = op.get_bind()
    tokens = bind.execute(sa.text("SELECT id, name, role, created_at FROM api_tokens")).all()
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("user_id", AutoId, nullable=True))
        batch.add_column(_ts("last_used_at"))
    for token_id, name, role, created_at in tokens:
        user_id = bind.execute(
            sa.text(
                "INSERT INTO users (name, role, created_at) VALUES (:name, :role, :at) RETURNING id"
            ),
            {"name": name, "role": role, "at": created_at},
        ).scalar_one()
        bind.execute(
            sa.text("UPDATE api_tokens SET user_id = :user WHERE id = :id"),
            {"user": user_id, "id": token_id},
        )
    with op.batch_alter_table("api_tokens") as batch:
        batch.alter_column("user_id", existing_type=AutoId, nullable=False)
        batch.drop_constraint("uq_api_tokens_name", type_="unique")
        batch.drop_column("role")
        batch.create_unique_constraint("uq_api_tokens_user_name", ["user_id", "name"])
        batch.create_foreign_key(
            "fk_api_tokens_user_id_users", "users", ["user_id"], ["id"], ondelete="CASCADE"
        )
        batch.create_index("ix_api_tokens_user_id", ["user_id"])


def downgrade() -> None:
    op.drop_index("uq_submissions_graded_attempt", table_name="submissions")
    op.drop_index("ix_submissions_assignment_user", table_name="submissions")
    op.drop_index("ix_submissions_user_id", table_name="submissions")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint("fk_submissions_assignment_id_assignments", "submissions")
        op.drop_constraint("fk_submissions_user_id_users", "submissions")
    # In place on SQLite (3.35+), for the reason given in upgrade().
    for column in ("graded_attempt", "assignment_id", "user_id"):
        op.drop_column("submissions", column)
    for table in (
        "grade_adjustments",
        "assignment_overrides",
        "assignment_problems",
        "assignments",
        "course_members",
        "courses",
        "login_failures",
        "password_resets",
        "web_sessions",
    ):
        op.drop_table(table)
    bind = op.get_bind()
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("role", sa.String(16), nullable=True))
    bind.execute(
        sa.text(
            "UPDATE api_tokens SET role = (SELECT CASE WHEN users.role = 'admin' THEN 'admin' "
            "ELSE 'instructor' END FROM users WHERE users.id = api_tokens.user_id)"
        )
    )
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_index("ix_api_tokens_user_id")
        batch.drop_constraint("fk_api_tokens_user_id_users", type_="foreignkey")
        batch.drop_constraint("uq_api_tokens_user_name", type_="unique")
        batch.alter_column("role", existing_type=sa.String(16), nullable=False)
        batch.drop_column("user_id")
        batch.drop_column("last_used_at")
        batch.create_unique_constraint("uq_api_tokens_name", ["name"])
    op.drop_table("users")
