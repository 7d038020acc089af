"""The 0003 migration numbers the events of a database made at 0002 per submission, in the order
they were written, then enforces the numbering; new events continue it, and it downgrades."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import IntegrityError

import app.auth.models
import app.submissions.models
import app.testcases.models  # noqa: F401  (registers the tables)
from app.db.base import Base, utcnow
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from app.submissions.repository import SubmissionRepository
from app.worker.runtime import open_database
from tests.conftest import PROBLEMS_DIR
from tests.submissions.conftest import grader_settings
from tests.support.services import PostgresCluster


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """An empty database: a new SQLite file, or a new PostgreSQL database (the shared one is
    already at the newest revision)."""
    if request.param == "sqlite":
        return None
    postgres: PostgresCluster = request.getfixturevalue("postgres")
    return postgres.create_database("tensorjudge_event_seq")


@pytest.fixture
def engine(tmp_path: Path, fresh_url: str | None) -> Iterator[Engine]:
    made = make_engine(grader_settings(tmp_path / "data", fresh_url, problems_dir=PROBLEMS_DIR))
    yield made
    made.dispose()


# Written in this order: the table-wide ids interleave the two submissions.
EVENTS = [("a", "queued"), ("b", "queued"), ("a", "running"), ("b", "running"), ("a", "done")]


def _fill_at_0002(engine: Engine) -> None:
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0002_instructors")
    with engine.begin() as conn:
        for submission_id in ("a", "b"):
            conn.execute(
                text(
                    "INSERT INTO submissions (id, problem_id, mode, code, code_sha256, client,"
                    " request_sha256, status, attempts, run, created_at) VALUES (:id,"
                    " 'multi-head-attention', 'submit', 'x = 1', '-', 'test', '-', 'done', 1, 1,"
                    " :now)"
                ),
                {"id": submission_id, "now": utcnow()},
            )
        for submission_id, status in EVENTS:
            conn.execute(
                text(
                    "INSERT INTO submission_events (submission_id, kind, data, created_at)"
                    " VALUES (:id, 'status', :data, :now)"
                ),
                {"id": submission_id, "data": f'{{"status": "{status}"}}', "now": utcnow()},
            )


def _numbered(engine: Engine) -> list[tuple[str, int, str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT submission_id, seq, data FROM submission_events ORDER BY id")
        ).all()
    return [(r[0], r[1], r[2]) for r in rows]


def test_existing_events_are_numbered_per_submission(
    engine: Engine, tmp_path: Path, fresh_url: str | None
) -> None:
    _fill_at_0002(engine)
    upgrade(engine)
    assert _numbered(engine) == [
        ("a", 1, '{"status": "queued"}'),
        ("b", 1, '{"status": "queued"}'),
        ("a", 2, '{"status": "running"}'),
        ("b", 2, '{"status": "running"}'),
        ("a", 3, '{"status": "done"}'),
    ]
    with engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if "submission_events" in repr(d)] == []

    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO submission_events (submission_id, seq, kind, data, created_at)"
                " VALUES ('a', 2, 'status', '{}', :now)"
            ),
            {"now": utcnow()},
        )

    settings = grader_settings(tmp_path / "data", fresh_url)
    app_engine, sessions = open_database(settings)
    with sessions() as session:
        SubmissionRepository(session).add_event("a", "status", {"status": "queued"})
        session.commit()
        assert [e.seq for e in SubmissionRepository(session).events_after("a", 2)] == [3, 4]
    app_engine.dispose()

    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0002_instructors")
    with engine.connect() as conn:
        columns = {c["name"] for c in inspect(conn).get_columns("submission_events")}
    assert "seq" not in columns
    upgrade(engine)
    assert [seq for _, seq, _ in _numbered(engine)] == [1, 1, 2, 2, 3, 4]
