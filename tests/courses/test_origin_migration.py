"""Migration 0008 on SQLite and PostgreSQL: existing accounts are attributed to a course only
where nothing else can have made or used them, the column matches the model, and it goes down
and up again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

import app.assignments.models
import app.auth.models
import app.courses.models
import app.gradebook.models
import app.lti.models
import app.submissions.models
import app.testcases.models  # noqa: F401  (registers the tables)
from app.db.base import Base
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from tests.instructors.conftest import make_settings

AT = datetime(2026, 11, 1, tzinfo=UTC)

# name: (role, password hash, oidc issuer, courses, has a token, has an LMS identity)
ACCOUNTS: dict[str, tuple[str, str | None, str | None, tuple[int, ...], bool, bool]] = {
    "roster": ("member", None, None, (1,), False, False),
    "two_courses": ("member", None, None, (1, 2), False, False),
    "no_course": ("member", None, None, (), False, False),
    "with_password": ("member", "argon2-hash", None, (1,), False, False),
    "with_sso": ("member", None, "https://idp.example.edu", (2,), False, False),
    "with_token": ("member", None, None, (2,), True, False),
    "from_lms": ("member", None, None, (1,), False, True),
    "instructor": ("instructor", None, None, (1,), False, False),
}
ATTRIBUTED = {"roster": 1}


def test_existing_accounts_are_attributed_only_when_nothing_else_can_claim_them(
    tmp_path: Path, database_url: str | None
) -> None:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0007_lti")
    with engine.begin() as conn:
        for course in (1, 2):
            conn.execute(
                text("INSERT INTO courses (id, title, created_at) VALUES (:i, :t, :c)"),
                {"i": course, "t": f"Course {course}", "c": AT},
            )
        conn.execute(
            text(
                "INSERT INTO lti_platforms (id, name, issuer, client_id, auth_login_url, "
                "auth_token_url, keyset_url, created_at) VALUES (1, 'LMS', 'https://lms', "
                "'tool', 'https://lms/a', 'https://lms/t', 'https://lms/k', :c)"
            ),
            {"c": AT},
        )
        for n, (name, (role, password, issuer, courses, token, lms)) in enumerate(
            ACCOUNTS.items(), start=1
        ):
            conn.execute(
                text(
                    "INSERT INTO users (id, email, name, role, password_hash, oidc_issuer, "
                    "oidc_subject, created_at) VALUES (:i, :e, :n, :r, :p, :o, :s, :c)"
                ),
                {
                    "i": n,
                    "e": f"{name}@example.edu",
                    "n": name,
                    "r": role,
                    "p": password,
                    "o": issuer,
                    "s": name if issuer else None,
                    "c": AT,
                },
            )
            for course in courses:
                conn.execute(
                    text(
                        "INSERT INTO course_members (course_id, user_id, role, status, "
                        "created_at) VALUES (:k, :u, 'student', 'active', :c)"
                    ),
                    {"k": course, "u": n, "c": AT},
                )
            if token:
                conn.execute(
                    text(
                        "INSERT INTO api_tokens (user_id, name, token_sha256, created_at) "
                        "VALUES (:u, 'cli', :d, :c)"
                    ),
                    {"u": n, "d": f"{n:064d}", "c": AT},
                )
            if lms:
                conn.execute(
                    text(
                        "INSERT INTO lti_users (platform_id, subject, user_id) VALUES (1, :s, :u)"
                    ),
                    {"s": name, "u": n},
                )
    upgrade(engine)
    with engine.connect() as conn:
        got = dict(conn.execute(text("SELECT name, created_by_course_id FROM users")).all())
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert got == {name: ATTRIBUTED.get(name) for name in ACCOUNTS}
    assert [d for d in diffs if "created_by_course_id" in repr(d)] == []
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0007_lti")
        command.upgrade(alembic_config(conn), "head")
