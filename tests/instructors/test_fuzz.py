"""A bounded schemathesis pass over the instructor routes, with a valid instructor token so the
generated bodies reach the handlers: no input gets a 5xx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient

from app.main import create_app
from tests.instructors.conftest import (
    CASES,
    add_tokens,
    as_json,
    bearer,
    case_inputs,
    make_settings,
)
from tests.support.fuzz import fuzz

EXAMPLES_PER_OPERATION = 30


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_instructor_input_gets_a_server_error(tmp_path: Path) -> None:
    app = create_app(make_settings(tmp_path / "data"))
    with TestClient(app) as client:
        headers = bearer(add_tokens(client).admin)
        made = client.post(
            CASES, json={"name": "known", "inputs": as_json(case_inputs())}, headers=headers
        )
        assert made.status_code == 201
        known = {"problem_id": "multi-head-attention", "case_id": made.json()["id"]}
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        operations = [
            result.ok()
            for result in schema.get_all_operations()
            if "instructors" in (result.ok().definition.raw.get("tags") or [])
        ]
        assert len(operations) >= 6, [op.path for op in operations]

        def strategies(operation: Any) -> list[Any]:
            names = {p.name for p in operation.iter_parameters() if p.location == "path"}
            fixed = {name: known[name] for name in names if name in known}
            found = [operation.as_strategy(mode) for mode in schemathesis.GenerationMode]
            if fixed:
                found += [
                    operation.as_strategy(mode, path_parameters=fixed)
                    for mode in schemathesis.GenerationMode
                ]
            return found

        def call(case: Any) -> Any:
            if case.method == "DELETE" and case.path_parameters.get("case_id") == known["case_id"]:
                return None  # keep the known case for the other operations
            return case.call(headers=headers)

        seen, server_errors = fuzz(operations, strategies, call, EXAMPLES_PER_OPERATION)
        assert not server_errors, "\n".join(server_errors)
        post = ("POST", "/api/problems/{problem_id}/test-cases")
        assert seen[(*post, 4)] > 0, seen
