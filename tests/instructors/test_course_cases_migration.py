"""Migration 0008 on SQLite and PostgreSQL: the cases stored before it become the catalog's,
with their ids and versions, and grade as before; the table matches the model; it goes down
(dropping the courses' own cases) and up again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

# Imported to register every table the migration is compared with.
import app.assignments.models
import app.auth.models
import app.courses.models
import app.gradebook.models
import app.lti.models
import app.submissions.models
import app.testcases.models
from app.db.base import Base, utcnow
from app.db.engine import make_engine
from app.db.migrate import alembic_config, upgrade
from app.problems.loader import load_problems
from app.testcases.codec import expected_to_bytes, to_npz
from app.testcases.current import cases_at
from tests.conftest import PROBLEMS_DIR
from tests.instructors.conftest import PROBLEM, case_inputs, make_settings
from tests.support.services import PostgresCluster


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An empty database (the shared PostgreSQL one is already at the newest revision)."""
    url = None
    if request.param == "postgresql":
        postgres: PostgresCluster = request.getfixturevalue("postgres")
        url = postgres.create_database("tensorjudge_course_cases")
    made = make_engine(make_settings(tmp_path / "data", url))
    yield made
    made.dispose()


def _insert_case(conn: Any, name: str, added: int, removed: int | None) -> int:
    problem = load_problems(PROBLEMS_DIR)[PROBLEM]
    inputs = case_inputs(seed=added)
    expected = problem.reference(**inputs)
    row = conn.execute(
        text(
            "INSERT INTO test_cases (problem_id, name, visibility, weight, inputs_npz,"
            " expected_npy, warnings, created_by, created_at, added_in_version,"
            " removed_in_version) VALUES (:p, :name, 'hidden', 1.0, :inputs, :expected, '[]',"
            " 'ada', :now, :added, :removed) RETURNING id"
        ),
        {
            "p": PROBLEM,
            "name": name,
            "inputs": to_npz(inputs),
            "expected": expected_to_bytes(expected, None),
            "now": utcnow(),
            "added": added,
            "removed": removed,
        },
    )
    return int(row.scalar_one())


def _cases(engine: Engine) -> list[tuple[int, str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, name, course_id FROM test_cases ORDER BY id"))
        return [(r[0], r[1], r[2]) for r in rows]


def test_existing_cases_become_the_catalogs_with_their_ids(engine: Engine) -> None:
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0007_lti")
    with engine.begin() as conn:
        # Gaps in the ids (a gone case before each kept one), so a renumbering would show.
        gone = [_insert_case(conn, "gone-1", 2, 3)]
        kept = _insert_case(conn, "kept", 2, None)
        gone.append(_insert_case(conn, "gone-2", 2, 3))
        removed = _insert_case(conn, "removed", 3, 4)
        conn.execute(text("DELETE FROM test_cases WHERE name LIKE 'gone-%'"))
        conn.execute(
            text("INSERT INTO problem_test_sets VALUES (:p, 4, :now)"),
            {"p": PROBLEM, "now": utcnow()},
        )
    assert gone[0] < kept < gone[1] < removed
    upgrade(engine)
    assert _cases(engine) == [(kept, "kept", None), (removed, "removed", None)]
    with engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert [d for d in diffs if "test_cases" in repr(d)] == []

    # They grade practice and every course as before: the version's set is the same.
    problem = load_problems(PROBLEMS_DIR)[PROBLEM]
    with Session(engine) as session:
        course = app.courses.models.Course(title="C")
        session.add(course)
        session.commit()
        for scope in (None, course.id):
            at_3 = [c.name for c in cases_at(session, problem, 3, scope)]
            at_4 = [c.name for c in cases_at(session, problem, 4, scope)]
            assert at_3[-2:] == ["kept", "removed"] and at_4[-1] == "kept"
        course_id = course.id

    # A course's own case cannot outlive the schema that keeps it to its course.
    with engine.begin() as conn:
        own = _insert_case(conn, "own", 5, None)
        conn.execute(text("UPDATE test_cases SET course_id = :c WHERE id = :i"),
                     {"c": course_id, "i": own})  # fmt: skip
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0008_account_origin")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, name FROM test_cases ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [(kept, "kept"), (removed, "removed")]
    upgrade(engine)
    assert _cases(engine) == [(kept, "kept", None), (removed, "removed", None)]
