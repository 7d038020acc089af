"""Degenerate cases are accepted, with warnings that are stored and returned."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.problems.loader import Problem
from tests.instructors.conftest import CASES, Tokens, as_json, bearer, case_inputs


def add(api: TestClient, tokens: Tokens, inputs: dict[str, Any]) -> dict[str, Any]:
    response = api.post(
        CASES, json={"name": "weak", "inputs": as_json(inputs)}, headers=bearer(tokens.admin)
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def codes(body: dict[str, Any]) -> set[str]:
    return {w["code"] for w in body["warnings"]}


def listed(api: TestClient, tokens: Tokens) -> dict[str, Any]:
    cases = api.get(CASES, headers=bearer(tokens.admin)).json()["cases"]
    return next(c for c in cases if c["name"] == "weak")  # type: ignore[no-any-return]


def test_a_well_conditioned_case_has_no_warning(api: TestClient, tokens: Tokens):
    assert add(api, tokens, case_inputs())["warnings"] == []


@pytest.mark.parametrize(
    ("inputs", "code", "words"),
    [
        (case_inputs(num_heads=1), "single-head", "num_heads = 1"),
        (case_inputs(n_q=1), "length-one-sequence", "n_q = 1"),
        (case_inputs(n_k=1), "length-one-sequence", "n_k = 1"),
        (case_inputs(scale=40.0), "saturated-softmax", "largest weight exceeds 0.99"),
        (
            {
                k: np.round(3 * v) if isinstance(v, np.ndarray) else v
                for k, v in case_inputs().items()
            },
            "integer-valued",
            "whole numbers",
        ),
    ],
    ids=["single-head", "n_q-1", "n_k-1", "saturated", "integers"],
)
def test_degenerate_cases_are_stored_with_a_warning(
    api: TestClient, tokens: Tokens, inputs: dict[str, Any], code: str, words: str
):
    body = add(api, tokens, inputs)
    assert code in codes(body)
    assert words in next(w["message"] for w in body["warnings"] if w["code"] == code)
    assert listed(api, tokens)["warnings"] == body["warnings"], "stored and listed again"


def test_a_single_head_case_names_the_mistakes_it_cannot_catch(api: TestClient, tokens: Tokens):
    body = add(api, tokens, case_inputs(num_heads=1))
    missed = next(w["message"] for w in body["warnings"] if w["code"] == "misses-faults")
    for fault in ("reshape-order", "no-head-transpose", "no-transpose-back", "scale-dmodel"):
        assert fault in missed
    assert "missing-wo" not in missed


def test_a_few_saturated_rows_do_not_warn(api: TestClient, tokens: Tokens, mha: Problem):
    inputs = case_inputs(batch=4)
    inputs["Q"][0] *= 60.0  # one batch element of four: about a quarter of the rows saturate
    # The warning is the problem's own (its cases.py hook): read its threshold from there.
    hook = mha.warnings_hook.__globals__
    assert 0.1 < hook["saturated_fraction"](inputs) < hook["SATURATED_ROW_FRACTION"]
    assert "saturated-softmax" not in codes(add(api, tokens, inputs))


def test_built_in_cases_show_their_warnings(api: TestClient, tokens: Tokens):
    cases = {c["name"]: c for c in api.get(CASES, headers=bearer(tokens.admin)).json()["cases"]}
    large = cases["large-magnitude"]
    assert large["source"] == "builtin" and large["id"] is None
    assert {"saturated-softmax", "misses-faults"} <= codes(large)
    assert cases["self-2-heads"]["warnings"] == []
