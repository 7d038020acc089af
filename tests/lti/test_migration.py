"""Migrations 0007, 0011 and 0015 on SQLite and PostgreSQL: the LTI tables match the models, and
they go down and up again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

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

MINE = {
    "lti_platforms",
    "lti_deployments",
    "lti_keys",
    "lti_logins",
    "lti_contexts",
    "lti_users",
    "lti_line_items",
    "lti_deep_links",
    "lti_score_outbox",
    "lti_pending_links",
    "lti_identity_links",
    "lti_pending_members",
}


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


def test_the_lti_tables_match_the_models(tmp_path: Path, database_url: str | None) -> None:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) >= MINE
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if _table_of(d) in MINE] == []
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0006_oidc_logins")
    with engine.connect() as conn:
        assert not MINE & set(inspect(conn).get_table_names())
    upgrade(engine)
    with engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) >= MINE
    engine.dispose()
