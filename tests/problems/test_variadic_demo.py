"""Variadic dimension groups (``"*lead"`` in a shape): bound to a tuple of 0 or more sizes, the
same wherever the group appears, outputs following. The demo problem (fixtures-variadic/
variadic-demo: queries and keys with any number of leading axes, a mask with leading axes of its
own that must broadcast) is served, graded in the real sandbox at several ranks, diagnosed, and
given instructor cases that are accepted or refused naming the field."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.problems.cases import InvalidCase, bind_dims, broadcastable, output_shapes
from app.problems.spec import ProblemSpec
from tests.instructors.conftest import Tokens, add_tokens, bearer, error_of
from tests.support.api import grade_at
from tests.support.folders import serving_folder

FIXTURES = Path(__file__).parent / "fixtures-variadic"
DEMO = "variadic-demo"
URL = f"/api/problems/{DEMO}"

CORRECT = """
import numpy as np

def attention_weights(q, k, mask=None):
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)
"""

# Right for 2-D inputs only: k.T reverses every axis, so the product fails on leading axes.
ONLY_2D = CORRECT.replace('np.einsum("...qd,...kd->...qk", q, k)', "q @ k.T")


# --- the contract -----------------------------------------------------------------------------


def spec(params: list[dict[str, Any]], returns: dict[str, Any]) -> ProblemSpec:
    return ProblemSpec.model_validate(
        {
            "id": "x",
            "title": "x",
            "difficulty": "easy",
            "summary": "x",
            "function_name": "f",
            "params": params,
            "returns": returns,
            "requirements": [{"id": "r", "title": "r", "text": "r"}],
        }
    )


def arr(name: str, *shape: str) -> dict[str, Any]:
    return {"name": name, "kind": "array", "shape": list(shape)}


PAIR = spec([arr("a", "*lead", "n", "d"), arr("b", "*lead", "d")], {"shape": ["*lead", "n"]})


@pytest.mark.parametrize("lead", [(), (3,), (2, 4), (1, 2, 3)])
def test_a_group_binds_any_number_of_axes_and_the_output_follows(lead: tuple[int, ...]):
    dims = bind_dims(PAIR, {"a": np.zeros((*lead, 5, 2)), "b": np.zeros((*lead, 2))})
    assert dims == {"*lead": lead, "n": 5, "d": 2}
    assert output_shapes(PAIR, dims) == [(*lead, 5)]


def test_a_group_in_the_middle_takes_the_axes_between_the_named_ones():
    middle = spec([arr("a", "n", "*rest", "3")], {"shape": ["*rest", "n"]})
    dims = bind_dims(middle, {"a": np.zeros((4, 5, 6, 3))})
    assert dims == {"n": 4, "*rest": (5, 6)}
    assert output_shapes(middle, dims) == [(5, 6, 4)]
    with pytest.raises(InvalidCase, match="axis 3 must be 3, got 7"):
        bind_dims(middle, {"a": np.zeros((4, 5, 6, 7))})


@pytest.mark.parametrize(
    ("a", "b", "words"),
    [
        ((2, 5, 2), (3, 2), r"\*lead is \(3,\) \(axis 0\) but a gives \*lead=\(2,\)"),
        ((2, 5, 2), (2, 2)[1:], r"\*lead is \(\) \(no axes\) but a gives \*lead=\(2,\)"),
        ((5, 2), (1, 2), r"\*lead is \(1,\) \(axis 0\) but a gives \*lead=\(\)"),
        ((2, 3, 5, 2), (2, 4, 2), r"\*lead is \(2, 4\) \(axes 0..1\) but a gives"),
        ((2, 5, 2), (2, 3), r"axis 1 \(d\) is 3 but another input gives d=2"),
    ],
    ids=["other-size", "fewer-axes", "more-axes", "two-axes", "named-dim-after-group"],
)
def test_an_inconsistent_group_names_the_input_and_who_bound_it(a, b, words):
    with pytest.raises(InvalidCase, match=words) as raised:
        bind_dims(PAIR, {"a": np.zeros(a), "b": np.zeros(b)})
    assert raised.value.field == "b"


def test_too_few_axes_for_the_named_dimensions_is_refused():
    with pytest.raises(InvalidCase, match=r"at least 2 dimensions \(\*lead, n, d\)") as raised:
        bind_dims(PAIR, {"a": np.zeros(4), "b": np.zeros(4)})
    assert raised.value.field == "a"


@pytest.mark.parametrize(
    ("params", "returns", "words"),
    [
        ([arr("a", "*x", "n", "*y")], {"shape": ["n"]}, "at most one variadic group"),
        ([arr("a", "n")], {"shape": ["*n"]}, "no parameter's shape gives"),
        ([arr("a", "n")], {"shape": ["m"]}, "no parameter's shape gives"),
        ([arr("a", "*n", "n")], {"shape": ["n"]}, "used both as a dimension and as *n"),
        ([arr("a", "**n")], {"shape": ["1"]}, "String should match pattern"),
    ],
    ids=["two-groups", "unbound-group", "unbound-name", "group-and-name", "bad-name"],
)
def test_malformed_groups_are_refused_when_the_spec_loads(params, returns, words):
    with pytest.raises(ValidationError, match=words.replace("*", r"\*")):
        spec(params, returns)


def test_broadcastable_allows_ones_and_fewer_axes_but_never_growth():
    broadcastable("mask", (1, 3), (2, 4, 3))
    broadcastable("mask", (), (2, 3))
    for shape, target in [((2, 3), (4, 3)), ((1, 2, 4, 3), (2, 4, 3)), ((3, 1), (3,))]:
        with pytest.raises(InvalidCase, match="does not broadcast") as raised:
            broadcastable("mask", shape, target)
        assert raised.value.field == "mask"


# --- the demo problem, served -----------------------------------------------------------------


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with serving_folder(tmp_path, FIXTURES) as client:
        yield client


@pytest.fixture
def tokens(api: TestClient) -> Tokens:
    return add_tokens(api)


def grade(api: TestClient, code: str) -> dict[str, Any]:
    return grade_at(api, URL, code)


def test_the_problem_json_shows_the_groups(api: TestClient):
    detail = api.get(URL).json()
    shapes = {p["name"]: p["shape"] for p in detail["params"]}
    assert shapes == {
        "q": ["*lead", "n_q", "d"],
        "k": ["*lead", "n_k", "d"],
        "mask": ["*mask_lead", "mask_q", "mask_k"],
    }
    assert detail["outputs"] == [{"name": "output", "shape": ["*lead", "n_q", "n_k"]}]
    examples = {e["name"]: e for e in detail["examples"]}
    assert np.shape(examples["plain-2d"]["output"]) == (2, 3)
    assert np.shape(examples["batched-masked"]["output"]) == (2, 3, 4)


def test_a_correct_submission_is_accepted_at_every_rank(api: TestClient):
    body = grade(api, CORRECT)
    assert body["verdict"] == "accepted", body["tests"]
    assert len(body["tests"]) == 6 and {t["status"] for t in body["tests"]} == {"passed"}


def test_a_solution_for_two_dimensions_only_fails_on_the_leading_axes(api: TestClient):
    body = grade(api, ONLY_2D)
    assert body["verdict"] != "accepted"
    status = {t["name"]: t["status"] for t in body["tests"]}
    assert status["plain-2d"] == "passed"
    batched = next(t for t in body["tests"] if t["name"] == "batched-masked")
    assert batched["status"] == "error" and "could not be broadcast" in batched["message"]


def test_an_inverted_mask_is_diagnosed_on_probes_of_several_ranks(api: TestClient):
    body = grade(api, CORRECT.replace("np.where(mask, -np.inf", "np.where(~mask, -np.inf"))
    assert body["verdict"] == "wrong_answer"
    assert [d["code"] for d in body["diagnoses"]] == ["mask-inverted"]


def post(api: TestClient, tokens: Tokens, **body: Any) -> Any:
    return api.post(f"{URL}/test-cases", json=body, headers=bearer(tokens.admin))


def case(lead: tuple[int, ...], k_lead: tuple[int, ...] | None = None, mask=None) -> dict:
    rng = np.random.default_rng(len(lead))
    return {
        "q": rng.standard_normal((*lead, 2, 3)).tolist(),
        "k": rng.standard_normal((*(lead if k_lead is None else k_lead), 4, 3)).tolist(),
        "mask": mask,
    }


def test_instructor_cases_of_any_rank_are_accepted_and_shapes_follow(
    api: TestClient, tokens: Tokens
):
    row_mask = [[[False, True, False, False]]]  # (1, 1, 4): broadcast over heads and queries
    made = post(api, tokens, name="heads", inputs=case((2, 3), mask=row_mask))
    assert made.status_code == 201, made.text
    assert made.json()["shapes"] == {"q": [2, 3, 2, 3], "k": [2, 3, 4, 3], "mask": [1, 1, 4]}
    assert made.json()["output_shapes"] == {"output": [2, 3, 2, 4]}
    # Size-1 axes of a broadcast mask are no weak case.
    assert "unit-dimension" not in {w["code"] for w in made.json()["warnings"]}
    plain = post(api, tokens, name="plain", inputs=case(()))
    assert plain.status_code == 201, plain.text
    assert plain.json()["output_shape"] == [2, 4]
    body = grade(api, CORRECT)
    assert body["verdict"] == "accepted" and len(body["tests"]) == 8


@pytest.mark.parametrize(
    ("inputs", "field", "words"),
    [
        (case((2,), k_lead=(3,)), "inputs.k", "*lead is (3,) (axis 0) but q gives *lead=(2,)"),
        (case((2,), k_lead=()), "inputs.k", "*lead is () (no axes) but q gives *lead=(2,)"),
        (case((2,), mask=[[True] * 4] * 3), "inputs.mask", "does not broadcast to (2, 2, 4)"),
        (case((), mask=[[True] * 4] * 2), "inputs.mask", "blocks every key of some query"),
    ],
    ids=["other-sizes", "fewer-axes", "mask-not-broadcastable", "mask-blocks-a-row"],
)
def test_inconsistent_cases_are_422_naming_the_field(
    api: TestClient, tokens: Tokens, inputs: dict, field: str, words: str
):
    error = error_of(post(api, tokens, name="bad", inputs=inputs))
    assert error["field"] == field and words in error["message"], error


def test_npz_cases_bind_the_groups_too(api: TestClient, tokens: Tokens):
    def upload(name: str, arrays: dict[str, np.ndarray]) -> Any:
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return api.post(
            f"{URL}/test-cases",
            data={"name": name},
            files={"file": ("case.npz", buffer.getvalue())},
            headers=bearer(tokens.admin),
        )

    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((3, 2, 2, 3)), rng.standard_normal((3, 2, 5, 3))
    made = upload("npz-4d", {"q": q, "k": k, "expected": np.zeros((3, 2, 2, 5))})
    assert made.status_code == 422
    assert error_of(made)["field"] == "expected"
    made = upload("npz-4d", {"q": q, "k": k})
    assert made.status_code == 201, made.text
    assert made.json()["output_shape"] == [3, 2, 2, 5]
    refused = upload("npz-bad", {"q": q, "k": k[:, :1]})
    assert refused.status_code == 422
    error = error_of(refused)
    assert error["field"] == "inputs.k" and "*lead is (3, 1)" in error["message"]


def test_the_check_reports_the_ranks_each_group_takes():
    done = subprocess.run(
        [sys.executable, "-m", "app", "problems", "check", "--no-sandbox", str(FIXTURES / DEMO)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shapes: *lead takes 0, 1, 2 axes across the cases and probes" in done.stdout
    assert f"== {DEMO}: OK" in done.stdout
