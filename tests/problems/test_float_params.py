"""Float scalar parameters (``kind = "float"``, bounds, a default) end to end, on the layer-norm
fixture (tests/problems/fixtures-float/layer-norm: ``layer_norm(x, gamma, beta, eps=1e-05)``):
the contract, the signature, the wire into the real sandbox, instructors' JSON and .npz cases,
the stored case, and the diagnosis of a mistake about eps."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.problems.cases import InvalidCase, bind_dims, with_defaults
from app.problems.spec import ProblemSpec
from app.testcases.codec import from_npz, to_npz
from tests.instructors.conftest import Tokens, add_tokens, bearer, error_of
from tests.support.api import grade_at
from tests.support.folders import serving_folder

FIXTURES = Path(__file__).parent / "fixtures-float"
URL = "/api/problems/layer-norm"

# Refuses anything but a Python float for eps: the sandbox must pass the value as a float.
CORRECT = """
import numpy as np

def layer_norm(x, gamma, beta, eps=1e-05):
    assert type(eps) is float, type(eps)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta
"""


def spec(*params: dict[str, Any]) -> ProblemSpec:
    return ProblemSpec.model_validate(
        {
            "id": "x",
            "title": "x",
            "difficulty": "easy",
            "summary": "x",
            "function_name": "f",
            "params": [{"name": "x", "kind": "array", "shape": ["n"]}, *params],
            "returns": {"shape": ["n"]},
            "requirements": [{"id": "r", "title": "r", "text": "r"}],
        }
    )


EPS = {"name": "eps", "kind": "float", "minimum": 0.0, "maximum": 1.0, "default": 1e-5}


# --- the contract -----------------------------------------------------------------------------


def test_the_signature_shows_the_default():
    assert spec(EPS).signature == "f(x, eps=1e-05) -> np.ndarray"
    assert spec({**EPS, "default": None}).signature == "f(x, eps) -> np.ndarray"


@pytest.mark.parametrize(
    ("param", "words"),
    [
        ({**EPS, "minimum": 2.0}, "minimum 2.0 is above maximum 1.0"),
        ({**EPS, "default": 3.0}, r"default 3.0 is outside \[0.0, 1.0\]"),
        ({**EPS, "optional": True}, r"optional \(None\) or has a default, not both"),
        ({**EPS, "maximum": "inf"}, "finite number"),
        ({"name": "eps", "kind": "float", "maximum": 1.0}, "minimum"),
    ],
    ids=["bounds-reversed", "default-outside", "optional-and-default", "infinite", "no-minimum"],
)
def test_malformed_float_parameters_are_refused_on_load(param: dict[str, Any], words: str):
    with pytest.raises(ValidationError, match=words):
        spec(param)


def test_a_parameter_without_default_after_one_with_a_default_is_refused():
    with pytest.raises(ValidationError, match="every parameter after 'eps' needs a default"):
        spec(EPS, {"name": "k", "kind": "int"})


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (1.5, "must be between 0 and 1"),
        (-1e-9, "must be between 0 and 1"),
        (math.nan, "finite"),
        (True, "must be a number"),
        ("0.1", "must be a number"),
    ],
)
def test_values_out_of_bounds_or_of_another_type_are_refused(value: object, words: str):
    with pytest.raises(InvalidCase, match=words) as caught:
        bind_dims(spec(EPS), {"x": np.zeros(3), "eps": value})
    assert caught.value.field == "eps"


def test_a_default_is_filled_in_and_a_whole_number_becomes_a_float():
    s = spec(EPS)
    assert with_defaults(s, {"x": np.zeros(2)})["eps"] == 1e-5
    filled = with_defaults(s, {"x": np.zeros(2), "eps": 1})["eps"]
    assert filled == 1.0 and type(filled) is float


def test_stored_cases_keep_a_float_apart_from_an_array_with_no_axes():
    stored = from_npz(to_npz({"eps": 0.25, "zero_d": np.array(0.25), "k": 3}))
    assert type(stored["eps"]) is float and stored["eps"] == 0.25
    assert isinstance(stored["zero_d"], np.ndarray) and stored["zero_d"].shape == ()
    assert type(stored["k"]) is int


# --- served, graded, diagnosed ----------------------------------------------------------------


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with serving_folder(tmp_path_factory.mktemp("float"), FIXTURES) as client:
        yield client


@pytest.fixture(scope="module")
def tokens(api: TestClient) -> Tokens:
    return add_tokens(api)


def test_the_problem_json_gives_the_bounds_and_the_default(api: TestClient):
    body = api.get(URL).json()
    assert body["signature"] == "layer_norm(x, gamma, beta, eps=1e-05) -> np.ndarray"
    eps = next(p for p in body["params"] if p["name"] == "eps")
    assert eps == {
        "name": "eps",
        "kind": "float",
        "shape": None,
        "dtype": None,
        "optional": False,
        "minimum": 0.0,
        "maximum": 1.0,
        "default": 1e-5,
    }
    # The example that gives eps shows it; the one that leaves it out shows the default it used.
    assert [e["inputs"]["eps"] for e in body["examples"]] == [0.001, 1e-5]


def test_a_correct_solution_receives_a_float_and_is_accepted(api: TestClient):
    body = grade_at(api, URL, CORRECT)
    assert body["verdict"] == "accepted", body


def test_a_mistake_about_eps_is_diagnosed(api: TestClient):
    wrong = CORRECT.replace("np.sqrt(var + eps)", "(np.sqrt(var) + eps)")
    body = grade_at(api, URL, wrong)
    assert body["verdict"] == "wrong_answer"
    assert [d["code"] for d in body["diagnoses"]] == ["eps-outside-sqrt"]


def inputs(eps: object = None, **more: Any) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    body: dict[str, Any] = {
        "x": rng.standard_normal((2, 3)).tolist(),
        "gamma": [1.0, 0.5, 2.0],
        "beta": [0.0, 0.1, -0.1],
    }
    if eps is not None:
        body["eps"] = eps
    return {**body, **more}


def post(api: TestClient, tokens: Tokens, **body: Any) -> Any:
    return api.post(f"{URL}/test-cases", json=body, headers=bearer(tokens.admin))


def test_an_instructor_gives_eps_as_a_json_number(api: TestClient, tokens: Tokens):
    made = post(api, tokens, name="eps-given", inputs=inputs(0.001))
    assert made.status_code == 201, made.text
    assert made.json()["scalars"] == {"eps": 0.001}
    # A whole number is a float's value too, and a case that leaves eps out stores the default.
    assert post(api, tokens, name="eps-one", inputs=inputs(1)).json()["scalars"] == {"eps": 1.0}
    omitted = post(api, tokens, name="eps-default", inputs=inputs())
    assert omitted.status_code == 201, omitted.text
    assert omitted.json()["scalars"] == {"eps": 1e-5}
    listed = api.get(f"{URL}/test-cases", headers=bearer(tokens.admin)).json()["cases"]
    assert {c["name"]: c["scalars"].get("eps") for c in listed if c["source"] == "stored"} == {
        "eps-given": 0.001,
        "eps-one": 1.0,
        "eps-default": 1e-5,
    }
    assert grade_at(api, URL, CORRECT)["verdict"] == "accepted"


@pytest.mark.parametrize(
    ("eps", "words"),
    [(2, "must be between 0 and 1"), ("small", "must be a number"), (True, "must be a number")],
)
def test_a_bad_eps_is_a_422_naming_it(api: TestClient, tokens: Tokens, eps: object, words: str):
    error = error_of(post(api, tokens, name="bad-eps", inputs=inputs(eps)))
    assert error["field"] == "inputs.eps" and words in error["message"], error


def test_npz_cases_take_eps_as_a_0d_number(api: TestClient, tokens: Tokens):
    def upload(name: str, eps: np.ndarray) -> Any:
        arrays = {k: np.asarray(v) for k, v in inputs().items()}
        buffer = io.BytesIO()
        np.savez(buffer, eps=eps, **arrays)
        return api.post(
            f"{URL}/test-cases",
            data={"name": name},
            files={"file": ("case.npz", buffer.getvalue())},
            headers=bearer(tokens.admin),
        )

    made = upload("npz-eps", np.float64(0.25))
    assert made.status_code == 201, made.text
    assert made.json()["scalars"] == {"eps": 0.25}
    error = error_of(upload("npz-eps-vector", np.array([0.1, 0.2])))
    assert error["field"] == "inputs.eps" and "0-d number" in error["message"]
    error = error_of(upload("npz-eps-big", np.float64(7.0)))
    assert error["field"] == "inputs.eps" and "between 0 and 1" in error["message"]
