"""Bounded schemathesis passes over the whole OpenAPI document: no input gets a 5xx, and the
document is exact (every check schemathesis has, as a student, an instructor and an
administrator).

Both valid (positive) and invalid (negative) inputs are generated for every operation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient

from app.auth.tokens import create_token
from app.main import create_app
from tests.submissions.conftest import grader_settings
from tests.support.codes import CORRECT
from tests.support.exactness import check_document
from tests.support.fuzz import fuzz, in_shard

EXAMPLES_PER_OPERATION = 25
# Each pass covers the whole document in parts (by a hash of the operation), so that the
# parts run side by side on the suite's workers instead of one worker running it all.
SHARDS = 4
POST_SUBMISSION = ("POST", "/api/problems/{problem_id}/submissions")


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_input_gets_a_server_error(tmp_path: Path, shard: int) -> None:
    app = create_app(grader_settings(tmp_path / "data", None, workers=1))
    with TestClient(app) as client:  # runs the lifespan: database, migrations, workers
        done = client.post(
            "/api/problems/multi-head-attention/submissions?wait=30", json={"code": CORRECT}
        )
        assert done.status_code == 200
        # Random ids only ever reach the 404 branch: real ones are mixed in.
        known = {"problem_id": "multi-head-attention", "submission_id": done.json()["id"]}
        # Routes that take an optional bearer token get random ones from the generator (403);
        # a real token is mixed in too, so accepted requests are generated as well.
        with client.app.state.sessions() as session:  # type: ignore[attr-defined]
            _, token = create_token(session, "fuzzer", "instructor")
            session.commit()
        auth = {"Authorization": f"Bearer {token}"}
        schema = schemathesis.openapi.from_asgi("/openapi.json", app)
        everything = [result.ok() for result in schema.get_all_operations()]
        operations = [op for op in everything if in_shard(op.path, shard, SHARDS)]
        assert operations and any("submissions" in op.path for op in everything)

        def strategies(operation: Any) -> list[Any]:
            names = {p.name for p in operation.iter_parameters() if p.location == "path"}
            found = [
                operation.as_strategy(schemathesis.GenerationMode.POSITIVE),
                operation.as_strategy(schemathesis.GenerationMode.NEGATIVE),
            ]
            fixed = {name: known[name] for name in names if name in known}
            if fixed:
                found += [
                    operation.as_strategy(mode, path_parameters=fixed, headers=headers)
                    for mode in schemathesis.GenerationMode
                    for headers in (None, auth)
                ]
                # Valid inputs with a real token are what reaches the handler's accepting path;
                # weighted so that 25 draws include some (else (5/6)**25: 1 % of runs had none).
                valid = operation.as_strategy(
                    schemathesis.GenerationMode.POSITIVE, path_parameters=fixed, headers=auth
                )
                found += [valid] * 3
            return found

        seen, server_errors = fuzz(
            operations, strategies, lambda case: case.call(), EXAMPLES_PER_OPERATION
        )
        assert not server_errors, "\n".join(server_errors)
        if in_shard(POST_SUBMISSION[1], shard, SHARDS):
            # The pass reached the handler with accepted and with rejected inputs.
            post = POST_SUBMISSION
            assert seen[(*post, 2)] > 0 and seen[(*post, 4)] > 0, seen


# Few enough that both passes take under a minute on two cores; every operation still gets the
# coverage phase's scenarios (missing credentials, unsupported methods, each constraint broken).
EXACT_EXAMPLES = 15


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("who", ["student", "instructor", "admin"])
def test_the_openapi_document_is_exact(tmp_path: Path, who: str, shard: int) -> None:
    """``schemathesis run --checks all`` finds nothing, as a student (no token), as an
    instructor and as an administrator, on every operation the document lists (so a new route
    is checked too)."""
    app = create_app(grader_settings(tmp_path / "data", None, workers=1))
    with TestClient(app) as client:
        headers = {}
        if who != "student":
            with client.app.state.sessions() as session:  # type: ignore[attr-defined]
                _, token = create_token(session, "fuzzer", who)
                session.commit()
            headers = {"Authorization": f"Bearer {token}"}
        outcome = check_document(app, headers, EXACT_EXAMPLES, (shard, SHARDS))
    assert len(outcome.operations) >= 14, outcome.operations
    assert outcome.tested == outcome.operations, outcome.operations - outcome.tested
    assert not outcome.failures and not outcome.errors, outcome.report()
