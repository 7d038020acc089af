"""A bounded schemathesis pass over the gradebook's operations with every check, as an
instructor and as a student of the course: no 5xx, and every answer as the OpenAPI document
says (status, content type, body schema)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient

from app.main import create_app
from tests.gradebook.factories import MHA, T0, add_attempt, make_assignment
from tests.instructors.conftest import make_settings
from tests.support.fuzz import fuzz
from tests.support.people import seed_people

EXAMPLES_PER_OPERATION = 15


@pytest.mark.timeout(600)
def test_gradebook_operations_conform(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path / "data"))
    with TestClient(app):
        sessions = app.state.sessions
        people = seed_people(sessions)
        a = make_assignment(sessions, people.courses["course"])
        add_attempt(sessions, a, people.users["student"], MHA, 1, T0, 0.5, codes=["missing-wo"])
        known = {"course_id": people.courses["course"], "assignment_id": a,
                 "user_id": people.users["student"]}  # fmt: skip
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        operations = [
            op.ok()
            for op in schema.get_all_operations()
            if "gradebook" in (op.ok().definition.raw.get("tags") or [])
        ]
        assert len(operations) == 17, [op.path for op in operations]
        failures: list[str] = []

        def strategies(operation: Any) -> list[Any]:
            names = {p.name for p in operation.iter_parameters() if p.location == "path"}
            fixed = {name: known[name] for name in names}
            return [
                operation.as_strategy(mode, path_parameters=fixed, headers=people.headers(who))
                for mode in schemathesis.GenerationMode
                for who in ("instructor", "student")
            ]

        def call(case: Any) -> Any:
            response = case.call()
            try:
                case.validate_response(response)
            except (Exception, BaseExceptionGroup) as exc:  # every failed check, reported below
                failures.append(f"{case.method} {case.formatted_path}: {str(exc)[:300]}")
            return response

        seen, server_errors = fuzz(operations, strategies, call, EXAMPLES_PER_OPERATION)
        assert not server_errors, "\n".join(server_errors)
        assert not failures, "\n".join(sorted(set(failures))[:20])
        assert any(status == 2 for (_, _, status) in seen), seen
