"""Migration 0015 on SQLite and PostgreSQL: the sign-up requests match their model, and it
goes down and up again."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

import app.signup.models  # noqa: F401  (registers the table)
from app.db.base import Base
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from tests.instructors.conftest import make_settings
from tests.mail.test_migration import about_table


def test_the_signups_match_their_model(tmp_path: Path, database_url: str | None) -> None:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.connect() as conn:
        assert "signups" in inspect(conn).get_table_names()
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if about_table(d, "signups")] == []
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0014_feedback")
    with engine.connect() as conn:
        assert "signups" not in inspect(conn).get_table_names()
    upgrade(engine)
    engine.dispose()
