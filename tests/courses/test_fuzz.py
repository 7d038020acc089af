"""A bounded schemathesis pass over the courses routes, with real course and member ids and the
tokens of an instructor and a student: no input gets a 5xx, and every answer is either a
documented status or the one error shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient

from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.fuzz import fuzz
from tests.support.people import seed_people

EXAMPLES_PER_OPERATION = 30


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_courses_input_gets_a_server_error(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path / "data"))
    with TestClient(app) as client:
        people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
        known = {"course_id": people.courses["course"], "user_id": people.users["student_b"]}
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        operations = [
            op
            for op in (result.ok() for result in schema.get_all_operations())
            if "courses" in (op.definition.raw.get("tags") or [])
        ]
        assert len(operations) == 13
        undocumented: list[str] = []

        def strategies(operation: Any) -> list[Any]:
            names = {p.name for p in operation.iter_parameters() if p.location == "path"}
            fixed = {name: known[name] for name in names if name in known}
            found = []
            for who in ("instructor", "student"):
                headers = people.headers(who)
                found += [
                    operation.as_strategy(mode, path_parameters=fixed or None, headers=headers)
                    for mode in schemathesis.GenerationMode
                ]
                found += [
                    operation.as_strategy(
                        schemathesis.GenerationMode.POSITIVE,
                        path_parameters=fixed or None,
                        headers=headers,
                    )
                ] * 2
            return found

        def call(case: Any) -> Any:
            response = case.call()
            documented = case.operation.definition.raw.get("responses", {})
            if str(response.status_code) not in documented:
                status = response.status_code
                undocumented.append(f"{case.method} {case.formatted_path} -> {status}")
            if response.status_code >= 400:
                assert "error" in response.json(), response.text
            return response

        seen, server_errors = fuzz(operations, strategies, call, EXAMPLES_PER_OPERATION)
        assert not server_errors, "\n".join(server_errors)
        assert not undocumented, "\n".join(sorted(set(undocumented)))
        # Accepted inputs reached the handlers that change the roster.
        assert seen[("POST", "/api/courses/{course_id}/members", 2)] > 0, seen
        assert seen[("PATCH", "/api/courses/{course_id}/members/{user_id}", 2)] > 0, seen
