"""A problem that uses every kind of the contract (a boolean mask that is optional, an extra int
parameter, two named outputs, an expected error, a check of its own), loaded from an extra
folder (GRADER_PROBLEM_DIRS): served, graded in the real sandbox, diagnosed, and given
instructor cases."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.grading.compare import HIDDEN_WORDING
from app.main import create_app
from app.problems.loader import FoldersRefused, ProblemLoadError, load_problem, problem_folders
from tests.conftest import PROBLEMS_DIR
from tests.instructors.conftest import Tokens, add_tokens, bearer, error_of
from tests.support.api import grade_at
from tests.support.codes import CONTRACT_DEMO_CORRECT
from tests.support.folders import serving_folder

FIXTURES = Path(__file__).parent / "fixtures"
DEMO = "contract-demo"
URL = f"/api/problems/{DEMO}"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with serving_folder(tmp_path, FIXTURES) as client:
        yield client


@pytest.fixture
def tokens(api: TestClient) -> Tokens:
    return add_tokens(api)


def grade(api: TestClient, code: str) -> dict[str, Any]:
    return grade_at(api, URL, code)


def test_both_folders_are_served_and_the_demo_shows_its_contract(api: TestClient):
    ids = {p["id"] for p in api.get("/api/problems").json()}
    # Every folder of both directories: the built-in problems and the demo.
    assert ids == {f.name for f in problem_folders(PROBLEMS_DIR)} | {DEMO}
    detail = api.get(URL).json()
    params = {p["name"]: p for p in detail["params"]}
    assert params["mask"] == {
        "name": "mask",
        "kind": "array",
        "shape": ["n_q", "n_k"],
        "dtype": "bool",
        "optional": True,
        "minimum": None,
        "maximum": None,
        "default": None,
    }
    assert params["temperature"]["minimum"] == 1 and params["temperature"]["maximum"] == 8
    assert [o["name"] for o in detail["outputs"]] == ["output", "weights"]
    assert detail["multiple_outputs"] is True
    assert "mask=None" in detail["signature"]
    examples = {e["name"]: e for e in detail["examples"]}
    assert examples["no-mask"]["inputs"]["mask"] is None
    assert isinstance(examples["masked"]["inputs"]["mask"][0][0], bool)
    assert set(examples["masked"]["output"]) == {"output", "weights"}
    assert examples["blocked-row"]["raises"] == "ValueError"
    assert examples["blocked-row"]["output"] is None


def test_a_correct_submission_is_accepted(api: TestClient):
    body = grade(api, CONTRACT_DEMO_CORRECT)
    assert body["verdict"] == "accepted", body["tests"]
    assert {r["status"] for r in body["requirements"]} == {"passed"}
    multi = [t for t in body["tests"] if t["outputs"]]
    assert {o["name"] for t in multi for o in t["outputs"]} == {"output", "weights"}
    raising = [t for t in body["tests"] if t["raises"]]
    assert len(raising) == 2 and all(t["status"] == "passed" for t in raising)


def test_an_inverted_mask_is_diagnosed_and_each_output_reported(api: TestClient):
    body = grade(
        api, CONTRACT_DEMO_CORRECT.replace("np.where(mask, scores", "np.where(~mask, scores")
    )
    assert body["verdict"] == "wrong_answer"
    assert [d["code"] for d in body["diagnoses"]] == ["mask-inverted"]
    masked = next(t for t in body["tests"] if t["name"] == "masked")
    assert masked["status"] == "failed"
    assert {o["name"]: o["status"] for o in masked["outputs"]} == {
        "output": "failed",
        "weights": "failed",
    }
    assert masked["message"].startswith("output: ") and "; weights: " in masked["message"]
    assert all(o["error_grid"] and o["max_error"] > 0 for o in masked["outputs"])
    unmasked = next(t for t in body["tests"] if t["name"] == "no-mask")
    assert unmasked["status"] == "passed"


def test_ignoring_the_mask_is_the_problems_own_contract_check(api: TestClient):
    code = CONTRACT_DEMO_CORRECT.replace(
        "    if mask is not None:\n        scores", "    if False:\n        scores"
    )
    code = code.replace("raise ValueError", "pass  #")
    body = grade(api, code)
    assert body["verdict"] == "wrong_answer"
    assert [d["code"] for d in body["diagnoses"]] == ["assumes-no-mask"]
    assert "marked 'no-mask'" in body["diagnoses"][0]["evidence"]
    blocked = next(t for t in body["tests"] if t["name"] == "blocked-row")
    assert blocked["status"] == "failed"
    assert blocked["message"] == (
        "expected the function to raise ValueError, but it returned normally"
    )
    hidden = [t for t in body["tests"] if t["raises"] and t["visibility"] == "hidden"]
    # A hidden case says only that the call returned, in the grader's fixed wording.
    assert [t["message"] for t in hidden] == [HIDDEN_WORDING["not_raised"]]


def test_another_exception_fails_saying_what_was_expected(api: TestClient):
    body = grade(
        api, CONTRACT_DEMO_CORRECT.replace('raise ValueError("a query', 'raise KeyError("a query')
    )
    blocked = next(t for t in body["tests"] if t["name"] == "blocked-row")
    assert blocked["status"] == "failed"
    assert blocked["message"].startswith(
        "expected the function to raise ValueError, but it raised KeyError"
    )
    hidden = next(t for t in body["tests"] if t["raises"] and t["visibility"] == "hidden")
    assert hidden["status"] == "failed" and hidden["message"] == HIDDEN_WORDING["error"]


def test_one_array_where_a_tuple_is_due_is_an_invalid_output(api: TestClient):
    body = grade(
        api, CONTRACT_DEMO_CORRECT.replace("return weights @ V, weights", "return weights @ V")
    )
    assert body["verdict"] == "runtime_error"
    masked = next(t for t in body["tests"] if t["name"] == "masked")
    assert "expected a tuple of 2 numpy.ndarrays" in masked["message"]


# --- instructor cases -------------------------------------------------------------------------


def demo_inputs(seed: int = 0, masked: bool = True) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    mask = rng.random((3, 4)) < 0.6
    mask[:, 0] = True
    return {
        "Q": rng.standard_normal((3, 5)).tolist(),
        "K": rng.standard_normal((4, 5)).tolist(),
        "V": rng.standard_normal((4, 2)).tolist(),
        "temperature": 2,
        "mask": mask.tolist() if masked else None,
    }


def post(api: TestClient, tokens: Tokens, **body: Any) -> Any:
    return api.post(f"{URL}/test-cases", json=body, headers=bearer(tokens.admin))


def test_json_cases_take_booleans_null_outputs_by_name_and_expected_errors(
    api: TestClient, tokens: Tokens
):
    made = post(api, tokens, name="stored-masked", inputs=demo_inputs())
    assert made.status_code == 201, made.text
    assert made.json()["output_shapes"] == {"output": [3, 2], "weights": [3, 4]}
    plain = post(api, tokens, name="plain", inputs=demo_inputs(masked=False), visibility="public")
    assert plain.status_code == 201, plain.text
    assert plain.json()["nulls"] == ["mask"]
    detail = api.get(f"{URL}/test-cases/{plain.json()['id']}").json()
    assert detail["inputs"]["mask"] is None
    assert set(detail["expected"]) == {"output", "weights"}

    blocked = demo_inputs(1)
    blocked["mask"][2] = [False] * 4
    made = post(api, tokens, name="blocked", inputs=blocked, raises="ValueError")
    assert made.status_code == 201, made.text
    assert made.json()["raises"] == "ValueError" and made.json()["output_shape"] == []

    # The stored cases are graded along: the correct submission passes all of them.
    body = grade(api, CONTRACT_DEMO_CORRECT)
    assert body["verdict"] == "accepted"
    assert len(body["tests"]) == 3 + 4 + 3


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"inputs": {**demo_inputs(), "mask": [[1, 0, 1, 1]] * 3}}, "inputs.mask", "true/false"),
        ({"inputs": {**demo_inputs(), "Q": None}}, "inputs.Q", "not optional"),
        ({"inputs": {**demo_inputs(), "temperature": 9}}, "inputs.temperature", "between 1 and 8"),
        ({"raises": "ValueError"}, "raises", "returns normally"),
        ({"raises": "Exception"}, "raises", "can require only one of"),
        ({"expected": [[0.0, 1.0]]}, "expected", "one array per output"),
        (
            {"expected": {"output": [[0.0] * 2] * 3, "weights": [[0.25] * 4] * 3}},
            "expected.output",
            "disagrees with the reference",
        ),
    ],
    ids=[
        "numeric-mask",
        "null-required",
        "int-bound",
        "no-error",
        "hidden-unnamed-error",
        "expected-list",
        "expected-off",
    ],
)
def test_invalid_cases_are_422_naming_the_field(
    api: TestClient, tokens: Tokens, change: dict[str, Any], field: str, words: str
):
    body = {"name": "bad", "inputs": demo_inputs(), **change}
    response = post(api, tokens, **body)
    assert response.status_code == 422, response.text
    error = error_of(response)
    assert error["field"] == field and words in error["message"], error


def test_a_reference_error_without_raises_names_it(api: TestClient, tokens: Tokens):
    blocked = demo_inputs()
    blocked["mask"][0] = [False] * 4
    error = error_of(post(api, tokens, name="bad", inputs=blocked))
    assert error["field"] == "inputs" and "raised ValueError" in error["message"]


def test_npz_cases_keep_the_mask_boolean_and_leave_out_the_optional(
    api: TestClient, tokens: Tokens
):
    inputs = {k: np.asarray(v) for k, v in demo_inputs(2).items() if v is not None}
    buffer = io.BytesIO()
    np.savez(buffer, **inputs)
    made = api.post(
        f"{URL}/test-cases",
        data={"name": "from-npz"},
        files={"file": ("case.npz", buffer.getvalue())},
        headers=bearer(tokens.admin),
    )
    assert made.status_code == 201, made.text
    assert made.json()["shapes"]["mask"] == [3, 4]

    del inputs["mask"]
    buffer = io.BytesIO()
    np.savez(
        buffer,
        **inputs,
        **{"expected.output": np.zeros((3, 2)), "expected.weights": np.zeros((3, 4))},
    )
    response = api.post(
        f"{URL}/test-cases",
        data={"name": "npz-wrong"},
        files={"file": ("case.npz", buffer.getvalue())},
        headers=bearer(tokens.admin),
    )
    assert response.status_code == 422
    assert error_of(response)["field"] == "expected.output"


def test_warnings_come_from_the_problems_hook(api: TestClient, tokens: Tokens):
    inputs = demo_inputs()
    inputs["mask"] = [[True] * 4] * 3
    made = post(api, tokens, name="open-mask", inputs=inputs)
    assert made.status_code == 201, made.text
    assert "mask-blocks-nothing" in {w["code"] for w in made.json()["warnings"]}
    # An int parameter of 1 is no size-1 dimension; a size-1 array dimension is.
    made = post(api, tokens, name="cool", inputs={**demo_inputs(), "temperature": 1})
    assert "unit-dimension" not in {w["code"] for w in made.json()["warnings"]}
    one_value = {**demo_inputs(), "V": [[0.5]] * 4}
    made = post(api, tokens, name="one-value", inputs=one_value)
    assert [w["message"] for w in made.json()["warnings"] if w["code"] == "unit-dimension"] == [
        "d_v = 1: a size-1 dimension."
    ]


def test_stats_count_the_problems_own_codes(api: TestClient, tokens: Tokens):
    grade(api, CONTRACT_DEMO_CORRECT)
    grade(api, CONTRACT_DEMO_CORRECT.replace("np.where(mask, scores", "np.where(~mask, scores"))
    stats = api.get(f"{URL}/stats", headers=bearer(tokens.instructor)).json()
    assert stats["graded"] == 2 and stats["accepted"] == 1
    assert stats["diagnoses"] == [{"code": "mask-inverted", "count": 1}]


def test_diagnosability_covers_the_expected_error_cases(api: TestClient, tokens: Tokens):
    report = api.get(f"{URL}/diagnosability", headers=bearer(tokens.instructor))
    assert report.status_code == 200, report.text
    faults = {f["code"]: f for f in report.json()["faults"]}
    assert set(faults) == {
        "no-scale",
        "temperature-multiplied",
        "mask-inverted",
        "softmax-wrong-axis",
    }
    assert all(f["caught"] and f["told_apart_with_probes"] for f in faults.values())


# --- extra folders ----------------------------------------------------------------------------


def test_an_id_in_two_folders_stops_start_up(tmp_path: Path):
    extra = tmp_path / "course"
    shutil.copytree(PROBLEMS_DIR / "multi-head-attention", extra / "multi-head-attention")
    settings = Settings(
        data_dir=tmp_path / "data", problems_dir=PROBLEMS_DIR, problem_dirs=str(extra)
    )
    with pytest.raises(ProblemLoadError, match="also the id of") as info:
        create_app(settings)
    assert info.value.field == "id"


def test_a_broken_extra_folder_stops_start_up_naming_file_and_field(tmp_path: Path):
    broken = tmp_path / "course" / DEMO
    shutil.copytree(FIXTURES / DEMO, broken, ignore=shutil.ignore_patterns("__pycache__"))
    toml = broken / "problem.toml"
    toml.write_text(toml.read_text().replace('dtype = "bool"', 'dtype = "int8"'))
    settings = Settings(
        data_dir=tmp_path / "data", problems_dir=PROBLEMS_DIR, problem_dirs=str(broken.parent)
    )
    with pytest.raises(FoldersRefused) as info:
        create_app(settings)
    [(folder, [defect])] = info.value.refused.items()
    assert folder == broken
    assert re.match(r"problem\.toml: params\.\d\.array\.dtype: ", defect), defect


def test_a_reference_returning_one_array_for_two_outputs_names_the_case(tmp_path: Path):
    folder = tmp_path / DEMO
    shutil.copytree(FIXTURES / DEMO, folder, ignore=shutil.ignore_patterns("__pycache__"))
    ref = folder / "reference.py"
    ref.write_text(ref.read_text().replace("return weights @ V, weights", "return weights @ V"))
    with pytest.raises(ProblemLoadError, match="tuple of 2 arrays") as info:
        load_problem(folder)
    assert info.value.field == "public_examples()[masked]"


def test_a_hidden_case_requiring_an_exception_the_sandbox_does_not_name_is_refused(
    tmp_path: Path,
):
    """Of a hidden case the sandbox names only a few standard exception types (any other is
    ``Exception``): requiring another could never be judged, so the folder does not load."""
    folder = tmp_path / DEMO
    shutil.copytree(FIXTURES / DEMO, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("reference.py", "cases.py"):
        path = folder / name
        path.write_text(path.read_text().replace("ValueError", "StopIteration"))
    with pytest.raises(ProblemLoadError, match="does not name StopIteration") as info:
        load_problem(folder)
    assert info.value.field is not None and "all-blocked" in info.value.field
