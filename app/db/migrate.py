"""Bring the schema to the newest Alembic revision; run by the API and every worker at start-up.

Several processes may start together, so the upgrade is serialized: an advisory lock on
PostgreSQL, an exclusive file lock next to the SQLite database.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.core.config import REPO_ROOT

ALEMBIC_INI = REPO_ROOT / "alembic.ini"
# Arbitrary constant shared by every TensorJudge process: "TJ" + "mig".
PG_LOCK_ID = 0x544A6D6967


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(REPO_ROOT / "alembic"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine) -> None:
    if engine.dialect.name == "sqlite":
        database = engine.url.database
        lock_path = Path(f"{database}.migrate.lock") if database else None
        if lock_path is None or database == ":memory:":
            _upgrade(engine)
            return
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _upgrade(engine)
        return
    with engine.connect() as lock_connection:
        lock_connection.execute(text("SELECT pg_advisory_lock(:id)"), {"id": PG_LOCK_ID})
        try:
            _upgrade(engine)
        finally:
            lock_connection.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": PG_LOCK_ID})
            lock_connection.commit()


def _upgrade(engine: Engine) -> None:
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "head")


def is_current(engine: Engine) -> bool:
    """Whether the database is at the newest revision of this checkout (readiness)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    heads = set(ScriptDirectory.from_config(alembic_config()).get_heads())
    with engine.connect() as connection:
        current = set(MigrationContext.configure(connection).get_current_heads())
    return current == heads
