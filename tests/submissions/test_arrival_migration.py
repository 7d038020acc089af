"""Migration 0008 (SQLite and PostgreSQL): submissions made before it arrived when they were
inserted, as far as anyone knows; the column and its index match the models, and it goes back
down."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

import app.assignments.models
import app.auth.models
import app.courses.models
import app.gradebook.models
import app.submissions.models
import app.testcases.models  # noqa: F401  (registers the tables)
from app.db.base import Base
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from tests.instructors.conftest import make_settings


def test_old_submissions_arrived_when_inserted(tmp_path: Path, database_url: str | None) -> None:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0009_course_cases")
    created = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO submissions (id, problem_id, mode, code, code_sha256, client, "
                "request_sha256, status, attempts, run, created_at) VALUES ('old', "
                "'multi-head-attention', 'submit', 'x = 1', '-', 'ip:1.2.3.4', '-', 'done', 1, "
                "1, :at)"
            ),
            {"at": created},
        )
    upgrade(engine)
    with engine.connect() as conn:
        received = conn.execute(text("SELECT received_at FROM submissions")).scalar_one()
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        indexes = {i["name"] for i in inspect(conn).get_indexes("submissions")}
    if isinstance(received, str):  # SQLite
        received = datetime.fromisoformat(received)
    assert received.replace(tzinfo=UTC) == created
    assert [d for d in diffs if "received" in repr(d) or "client_created" in repr(d)] == []
    assert "ix_submissions_client_received" in indexes
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0009_course_cases")
    with engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("submissions")}
    assert "received_at" not in columns
    upgrade(engine)
    engine.dispose()
