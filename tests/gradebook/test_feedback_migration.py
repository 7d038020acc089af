"""Migration 0011 (SQLite and PostgreSQL): the comments, notes and hints tables and the
courses' default points match the models; an existing course gets 10 points; it goes back
down and up again."""

from __future__ import annotations

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

MINE = ("feedback_texts", "diagnosis_hints", "default_points")


def test_feedback_migration(tmp_path: Path, database_url: str | None) -> None:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0013_mail_outbox")
        conn.execute(
            text("INSERT INTO courses (title, created_at) VALUES ('Old course', :at)"),
            {"at": "2026-11-02 09:30:00+00:00"},
        )
    upgrade(engine)
    with engine.connect() as conn:
        points = conn.execute(text("SELECT default_points FROM courses")).scalar_one()
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        tables = set(inspect(conn).get_table_names())
    assert points == 10
    assert [d for d in diffs if any(name in repr(d) for name in MINE)] == []
    assert {"feedback_texts", "diagnosis_hints"} <= tables
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0013_mail_outbox")
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        columns = {c["name"] for c in inspect(conn).get_columns("courses")}
    assert not {"feedback_texts", "diagnosis_hints"} & tables
    assert "default_points" not in columns
    upgrade(engine)
    engine.dispose()
