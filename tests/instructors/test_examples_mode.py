""" "Run examples" runs the public cases of the current test set: the problem folder's examples
and the instructors' stored public cases, never a hidden one. Graded for real in the sandbox."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from app.problems.loader import Problem
from tests.instructors.conftest import (
    CASES,
    PROBLEM,
    MakeClient,
    add_tokens,
    as_json,
    bearer,
    case_inputs,
)
from tests.support.api import wait_done
from tests.support.codes import BATCH_FIVE_BUG


def graded(api: TestClient, code: str, mode: str) -> dict[str, Any]:
    created = api.post(f"/api/problems/{PROBLEM}/submissions", json={"code": code, "mode": mode})
    assert created.status_code == 202, created.text
    return wait_done(api, created.json()["id"])


def test_run_examples_includes_stored_public_cases_and_no_hidden_one(
    make_client: MakeClient, database_url: str | None, mha: Problem
):
    api = make_client(database_url)
    headers = bearer(add_tokens(api).admin)
    examples = [c.name for c in mha.examples]
    assert examples and all(c.visibility == "public" for c in mha.examples)

    # A hidden stored case that BATCH_FIVE_BUG fails: graded on submit, never run as an example.
    hidden = {"name": "hidden-batch-5", "inputs": as_json(case_inputs(seed=11, batch=5))}
    assert api.post(CASES, json=hidden, headers=headers).status_code == 201
    assert graded(api, BATCH_FIVE_BUG, "submit")["verdict"] == "wrong_answer"
    tried = graded(api, BATCH_FIVE_BUG, "examples")
    assert tried["verdict"] == "accepted", tried
    assert [t["name"] for t in tried["tests"]] == examples
    assert {t["visibility"] for t in tried["tests"]} == {"public"}
    assert tried["test_set_version"] == 2

    public = {
        "name": "public-batch-5",
        "visibility": "public",
        "inputs": as_json(case_inputs(seed=12, batch=5)),
    }
    assert api.post(CASES, json=public, headers=headers).status_code == 201
    tried = graded(api, BATCH_FIVE_BUG, "examples")
    assert tried["verdict"] == "wrong_answer", tried
    assert [t["name"] for t in tried["tests"]] == [*examples, "public-batch-5"]
    assert {t["visibility"] for t in tried["tests"]} == {"public"}
    failed = [t for t in tried["tests"] if t["status"] != "passed"]
    # A public case: shown by name, with where the answer is off.
    assert [t["name"] for t in failed] == ["public-batch-5"]
    assert failed[0]["expected_shape"] == [5, 3, 6] and failed[0]["max_error"] > 0
    assert tried["test_set_version"] == 3

    # The same code passes its examples once the instructor removes the public case again.
    listed = api.get(CASES, headers=headers).json()
    stored = [c for c in listed["cases"] if c["name"] == "public-batch-5"]
    assert len(stored) == 1
    assert api.delete(f"{CASES}/{stored[0]['id']}", headers=headers).status_code == 200
    tried = graded(api, BATCH_FIVE_BUG, "examples")
    assert tried["verdict"] == "accepted" and tried["test_set_version"] == 4
    assert [t["name"] for t in tried["tests"]] == examples
