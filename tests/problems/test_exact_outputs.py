"""Outputs that are bool or int (``dtype = "bool" | "int64"`` in ``returns``) are compared
exactly, on the above-threshold fixture (tests/problems/fixtures-exact: a bool mask and an int
count), graded in the real sandbox; instructors give a bool output's expected values as
true/false."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.problems.spec import Returns
from tests.instructors.conftest import Tokens, add_tokens, bearer, error_of
from tests.support.api import grade_at
from tests.support.folders import serving_folder

FIXTURES = Path(__file__).parent / "fixtures-exact"
URL = "/api/problems/above-threshold"

CORRECT = """
def above_threshold(x, threshold):
    mask = x > threshold
    return mask, mask.sum(axis=-1)
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with serving_folder(tmp_path_factory.mktemp("exact"), FIXTURES) as client:
        yield client


def outputs_of(body: dict[str, Any], case: str) -> dict[str, str]:
    test = next(t for t in body["tests"] if t["name"] == case)
    return {o["name"]: o["status"] for o in test["outputs"]}


def test_a_bool_and_an_int_output_are_accepted(api: TestClient):
    body = grade_at(api, URL, CORRECT)
    assert body["verdict"] == "accepted", body


def test_an_int_output_is_compared_exactly(api: TestClient):
    # Off by 1e-9: inside any float tolerance of the grader, but not equal.
    body = grade_at(api, URL, CORRECT.replace("mask.sum(axis=-1)", "mask.sum(axis=-1) + 1e-9"))
    assert body["verdict"] == "wrong_answer"
    assert outputs_of(body, "on-the-threshold") == {"mask": "passed", "count": "failed"}


def test_a_wrong_mask_fails_on_the_mask(api: TestClient):
    body = grade_at(api, URL, CORRECT.replace("x > threshold", "x >= threshold"))
    assert outputs_of(body, "on-the-threshold") == {"mask": "failed", "count": "failed"}


def test_an_exact_output_takes_no_tolerance():
    with pytest.raises(ValidationError, match="compared exactly"):
        Returns.model_validate(
            {"name": "mask", "shape": ["n"], "dtype": "bool", "tolerance": {"rtol": 1e-3}}
        )


def test_instructors_give_a_bool_output_as_true_false(api: TestClient):
    tokens: Tokens = add_tokens(api)
    inputs = {"x": [[0.0, 2.0], [3.0, -1.0]], "threshold": 1.0}

    def post(name: str, expected: dict[str, Any]) -> Any:
        body = {"name": name, "inputs": inputs, "expected": expected}
        return api.post(f"{URL}/test-cases", json=body, headers=bearer(tokens.admin))

    made = post("given", {"mask": [[False, True], [True, False]], "count": [1, 1]})
    assert made.status_code == 201, made.text
    error = error_of(post("wrong", {"mask": [[False, True], [True, True]], "count": [1, 1]}))
    assert error["field"] == "expected.mask" and "disagrees" in error["message"]
