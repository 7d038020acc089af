"""The 0002 migration creates exactly the tables the models describe, and downgrades cleanly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

import app.auth.models
import app.submissions.models
import app.testcases.models  # noqa: F401  (registers the tables)
from app.db.base import Base
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from tests.instructors.conftest import make_settings

MINE = {"api_tokens", "test_cases", "problem_test_sets"}


def _table_of(diff: Any) -> str | None:
    item = diff[0] if isinstance(diff, list) else diff
    for part in item[1:]:
        name = getattr(part, "name", None)
        table = getattr(part, "table", None)
        if table is not None:
            return str(table.name)
        if name in MINE:
            return str(name)
    return None


def test_migrated_schema_matches_the_models(tmp_path: Path, database_url: str | None):
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) >= MINE
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    mine = [d for d in diffs if _table_of(d) in MINE]
    assert mine == []
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0001_submissions")
    with engine.connect() as conn:
        assert not MINE & set(inspect(conn).get_table_names())
        assert "submissions" in inspect(conn).get_table_names()
    upgrade(engine)
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) >= MINE
    engine.dispose()
