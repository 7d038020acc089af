"""Migration 0011 on SQLite and PostgreSQL: the mail outbox matches its model, and it goes
down and up again."""

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
import app.mail.models
import app.submissions.models
import app.testcases.models  # noqa: F401  (registers the tables)
from app.db.base import Base
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from tests.instructors.conftest import make_settings


def about_table(diff: Any, name: str = "mail_outbox") -> bool:
    """Whether an autogenerate difference concerns the table ``name``."""
    item = diff[0] if isinstance(diff, list) else diff
    for part in item[1:]:
        table = getattr(part, "table", None)
        if table is not None and table.name == name:
            return True
        if getattr(part, "name", None) == name or part == name:
            return True
    return False


def test_the_mail_outbox_matches_its_model(tmp_path: Path, database_url: str | None) -> None:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.connect() as conn:
        assert "mail_outbox" in inspect(conn).get_table_names()
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if about_table(d)] == []
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0012_similarity")
    with engine.connect() as conn:
        assert "mail_outbox" not in inspect(conn).get_table_names()
    upgrade(engine)
    with engine.connect() as conn:
        assert "mail_outbox" in inspect(conn).get_table_names()
    engine.dispose()
