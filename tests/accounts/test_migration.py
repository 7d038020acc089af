"""Migrations 0005 and 0006 on a database made before accounts existed (SQLite and
PostgreSQL): every token keeps working as the token of an account of the same name and role,
and the accounts tables match the models."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text

import app.assignments.models
import app.auth.models
import app.courses.models
import app.gradebook.models
import app.submissions.models
import app.testcases.models  # noqa: F401  (registers the tables)
from app.auth.models import User
from app.auth.tokens import authenticate, digest
from app.db.base import Base
from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import alembic_config, upgrade
from tests.instructors.conftest import make_settings

MINE = {"users", "api_tokens", "web_sessions", "password_resets", "login_failures", "oidc_logins"}


def _table_of(diff: Any) -> str | None:
    item = diff[0] if isinstance(diff, list) else diff
    for part in item[1:]:
        table = getattr(part, "table", None)
        if table is not None:
            return str(table.name)
        name = getattr(part, "name", None)
        if name in MINE:
            return str(name)
    return None


def test_tokens_become_accounts(tmp_path: Path, database_url: str | None):
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    with engine.begin() as conn:
        # The shared PostgreSQL database may be at head already: back to before accounts.
        command.downgrade(alembic_config(conn), "base")
        command.upgrade(alembic_config(conn), "0004_fair_queue")
    created = datetime(2026, 11, 1, tzinfo=UTC)
    with engine.begin() as conn:
        for name, role, secret, revoked in (
            ("ada", "instructor", "tj_ada-secret", None),
            ("root", "admin", "tj_root-secret", None),
            ("gone", "instructor", "tj_gone-secret", created),
        ):
            conn.execute(
                text(
                    "INSERT INTO api_tokens (name, role, token_sha256, created_at, revoked_at) "
                    "VALUES (:n, :r, :d, :c, :v)"
                ),
                {"n": name, "r": role, "d": digest(secret), "c": created, "v": revoked},
            )
    upgrade(engine)
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        ada = authenticate(session, "tj_ada-secret")
        root = authenticate(session, "tj_root-secret")
        assert ada is not None and (ada.name, ada.role) == ("ada", "instructor")
        assert root is not None and root.role == "admin" and root.is_admin
        assert authenticate(session, "tj_gone-secret") is None
        users = {u.name: u for u in session.scalars(select(User))}
        assert set(users) == {"ada", "root", "gone"}
        assert all(u.email is None and u.password_hash is None for u in users.values())
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) >= MINE
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if _table_of(d) in MINE] == []
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0005_courses")
    with engine.connect() as conn:
        assert "oidc_logins" not in inspect(conn).get_table_names()
    upgrade(engine)
    with engine.connect() as conn:
        assert "oidc_logins" in inspect(conn).get_table_names()
    engine.dispose()


def test_existing_submissions_stay_as_anonymous_practice(tmp_path: Path, database_url: str | None):
    """Submissions made before accounts keep their result, grading history and events through
    0005 and back (a copy-and-rename of the table on SQLite would cascade-delete them), and
    are anonymous practice: no account, no assignment, no graded attempt."""
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
        command.upgrade(alembic_config(conn), "0004_fair_queue")
    at = datetime(2026, 11, 2, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO submissions (id, problem_id, mode, code, code_sha256, client, "
                "request_sha256, status, attempts, run, verdict, score, report, created_at) "
                "VALUES ('old-1', 'multi-head-attention', 'submit', 'x = 1', :h, 'ip:1.2.3.4', "
                ":h, 'done', 1, 1, 'wrong_answer', 0.0, '{}', :at)"
            ),
            {"h": "0" * 64, "at": at},
        )
        conn.execute(
            text(
                "INSERT INTO gradings (submission_id, run, attempt, verdict, score, report, "
                "finished_at) VALUES ('old-1', 1, 1, 'wrong_answer', 0.0, '{}', :at)"
            ),
            {"at": at},
        )
        conn.execute(
            text(
                "INSERT INTO submission_events (submission_id, seq, kind, data, created_at) "
                "VALUES ('old-1', 1, 'status', '{}', :at)"
            ),
            {"at": at},
        )

    def counts() -> list[int]:
        queries = [
            f"SELECT count(*) FROM {table} WHERE submission_id = 'old-1'"
            for table in ("gradings", "submission_events")
        ] + ["SELECT count(*) FROM submissions WHERE id = 'old-1'"]
        with engine.connect() as conn:
            return [conn.execute(text(q)).scalar_one() for q in queries]

    upgrade(engine)
    assert counts() == [1, 1, 1]
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT user_id, assignment_id, graded_attempt, verdict FROM submissions "
                "WHERE id = 'old-1'"
            )
        ).one()
    assert tuple(row) == (None, None, None, "wrong_answer")
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0004_fair_queue")
    assert counts() == [1, 1, 1]
    upgrade(engine)
    engine.dispose()
