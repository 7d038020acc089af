"""Alembic environment: the URL comes from Settings, or a connection is handed in by the app."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

# Imported for their side effect: each registers its tables on Base.metadata, so autogenerate
# sees every table.
import app.assignments.models
import app.auth.models
import app.courses.models
import app.gradebook.models
import app.lti.models
import app.mail.models
import app.signup.models
import app.similarity.models
import app.submissions.models
import app.testcases.models  # noqa: F401
from app.core.config import get_settings
from app.db.base import Base
from app.db.engine import make_engine

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(get_settings())
    with engine.begin() as own_connection:
        _run(own_connection)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run them against a database")
run_migrations_online()
