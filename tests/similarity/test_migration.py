"""Migration 0011 (SQLite and PostgreSQL): the table matches the model, one report per
assignment problem is enforced by the database, it goes back down and up again."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

import app.assignments.models
import app.auth.models
import app.courses.models
import app.gradebook.models
import app.lti.models
import app.similarity.models
import app.submissions.models
import app.testcases.models  # noqa: F401  (registers the tables)
from app.db.base import Base
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from tests.instructors.conftest import make_settings


def test_similarity_reports_table(tmp_path: Path, database_url: str | None) -> None:
    engine = make_engine(make_settings(tmp_path / "data", database_url))
    upgrade(engine)
    with engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if "similarity" in repr(d)] == []
    insert = text(
        "INSERT INTO similarity_reports (assignment_id, problem_id, status, requested_at, "
        "attempts, students) VALUES (:a, 'multi-head-attention', 'queued', CURRENT_TIMESTAMP, "
        "0, 0)"
    )
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO courses (title, join_code, created_at) "
                "VALUES ('c', 'J', CURRENT_TIMESTAMP)"
            )
        )
        course = conn.execute(text("SELECT id FROM courses")).scalar_one()
        conn.execute(
            text(
                "INSERT INTO assignments (course_id, title, due_at, late_deadlines, after_close, "
                "scoring, feedback, hide_scores, attempt_penalties, rate_window_seconds, "
                "per_student_cases, created_at) VALUES (:c, 'a', CURRENT_TIMESTAMP, '[]', "
                "'closed', 'best', 'visible', false, '[]', 3600, false, CURRENT_TIMESTAMP)"
            ),
            {"c": course},
        )
        assignment = conn.execute(text("SELECT id FROM assignments")).scalar_one()
        conn.execute(insert, {"a": assignment})
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert, {"a": assignment})
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0011_lms_link")
    with engine.connect() as conn:
        assert "similarity_reports" not in inspect(conn).get_table_names()
    upgrade(engine)
    engine.dispose()
