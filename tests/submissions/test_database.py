"""The SQLite engine's durability settings: WAL, and an fsync per commit unless told otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from app.db.engine import make_engine
from tests.submissions.conftest import grader_settings

# PRAGMA synchronous answers a number: 1 is NORMAL, 2 is FULL.
LEVELS = {"NORMAL": 1, "FULL": 2}


@pytest.mark.parametrize("level", [None, "NORMAL", "FULL"])
def test_sqlite_runs_in_wal_mode_with_the_configured_sync_level(tmp_path: Path, level: str | None):
    overrides = {} if level is None else {"sqlite_synchronous": level}
    engine = make_engine(grader_settings(tmp_path / "data", None, **overrides))
    try:
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA synchronous")).scalar() == LEVELS[level or "FULL"]
    finally:
        engine.dispose()
