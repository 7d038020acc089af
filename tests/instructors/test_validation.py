"""Every validation rule for a new case: a 422 naming the field, and nothing stored."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.instructors.conftest import (
    CASES,
    MakeClient,
    Tokens,
    add_tokens,
    as_json,
    bearer,
    case_inputs,
    error_of,
)


def post_json(api: TestClient, tokens: Tokens, inputs: Any, **fields: Any) -> Any:
    body = {"name": "case-1", "inputs": inputs, **fields}
    return api.post(CASES, json=body, headers=bearer(tokens.admin))


def post_raw(api: TestClient, tokens: Tokens, text: str) -> Any:
    headers = {**bearer(tokens.admin), "Content-Type": "application/json"}
    return api.post(CASES, content=text.encode(), headers=headers)


def npz_bytes(**arrays: Any) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def post_npz(api: TestClient, tokens: Tokens, data: bytes, **fields: str) -> Any:
    form = {"name": "upload-1", **fields}
    return api.post(
        CASES,
        data=form,
        files={"file": ("case.npz", data, "application/octet-stream")},
        headers=bearer(tokens.admin),
    )


def assert_rejected(api: TestClient, tokens: Tokens, response: Any, field: str, status: int = 422):
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["field"] == field, error
    listed = api.get(CASES, headers=bearer(tokens.admin)).json()
    assert all(c["source"] == "builtin" for c in listed["cases"]), "nothing may be stored"
    assert listed["test_set_version"] == 1, "a rejected case must not bump the version"
    return error


# -- the signature ---------------------------------------------------------------------------


def test_a_missing_input_is_named(api: TestClient, tokens: Tokens):
    inputs = as_json(case_inputs())
    del inputs["W_o"]
    error = assert_rejected(api, tokens, post_json(api, tokens, inputs), "inputs.W_o")
    assert "missing" in error["message"]


def test_an_unknown_input_is_named(api: TestClient, tokens: Tokens):
    inputs = {**as_json(case_inputs()), "bias": [1.0]}
    assert_rejected(api, tokens, post_json(api, tokens, inputs), "inputs.bias")


def test_wrong_number_of_dimensions(api: TestClient, tokens: Tokens):
    inputs = as_json(case_inputs())
    inputs["Q"] = inputs["Q"][0]  # (n_q, d_model): the batch axis is missing
    error = assert_rejected(api, tokens, post_json(api, tokens, inputs), "inputs.Q")
    assert "3 dimensions" in error["message"]


def test_d_model_must_agree_across_inputs(api: TestClient, tokens: Tokens):
    inputs = case_inputs()
    inputs["W_k"] = np.ones((8, 8)) / 8
    error = assert_rejected(api, tokens, post_json(api, tokens, as_json(inputs)), "inputs.W_k")
    assert "d_model" in error["message"]


def test_k_and_v_must_have_the_same_length(api: TestClient, tokens: Tokens):
    inputs = case_inputs(n_k=4)
    inputs["V"] = inputs["V"][:, :3]
    error = assert_rejected(api, tokens, post_json(api, tokens, as_json(inputs)), "inputs.V")
    assert "n_k" in error["message"]


def test_d_model_must_be_divisible_by_num_heads(api: TestClient, tokens: Tokens):
    inputs = case_inputs(d_model=6, num_heads=4)
    error = assert_rejected(
        api, tokens, post_json(api, tokens, as_json(inputs)), "inputs.num_heads"
    )
    assert "divisible" in error["message"]


@pytest.mark.parametrize("value", [0, 65, 2.5, True, "2"])
def test_num_heads_must_be_an_integer_in_range(api: TestClient, tokens: Tokens, value: Any):
    inputs = {**as_json(case_inputs()), "num_heads": value}
    assert_rejected(api, tokens, post_json(api, tokens, inputs), "inputs.num_heads")


# -- values ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), "1e400"])
def test_values_must_be_finite(api: TestClient, tokens: Tokens, value: Any):
    inputs = as_json(case_inputs())
    inputs["Q"][0][0][0] = 12345.5 if value == "1e400" else value
    # json.dumps writes NaN/Infinity literals, which the server's JSON reader accepts; 1e400
    # is a valid JSON number that overflows to infinity.
    raw = json.dumps({"name": "case-1", "inputs": inputs}).replace("12345.5", "1e400")
    error = assert_rejected(api, tokens, post_raw(api, tokens, raw), "inputs.Q")
    assert "NaN or infinity" in error["message"]


def test_arrays_must_hold_numbers(api: TestClient, tokens: Tokens):
    inputs = as_json(case_inputs())
    inputs["K"][0][0][0] = "0.5"
    error = assert_rejected(api, tokens, post_json(api, tokens, inputs), "inputs.K")
    assert "numbers" in error["message"]


def test_ragged_arrays_are_refused(api: TestClient, tokens: Tokens):
    inputs = as_json(case_inputs())
    inputs["V"][0][1] = inputs["V"][0][1][:-1]
    error = assert_rejected(api, tokens, post_json(api, tokens, inputs), "inputs.V")
    assert "ragged" in error["message"]


def test_an_array_over_the_size_cap_is_refused(make_client: MakeClient):
    api = make_client(case_max_elements=40)  # Q of (2, 3, 6) has 36 elements, K (2, 4, 6) 48
    tokens = add_tokens(api)
    error = assert_rejected(api, tokens, post_json(api, tokens, as_json(case_inputs())), "inputs.K")
    assert "limit is 40" in error["message"]


def test_a_body_over_the_byte_cap_is_413(make_client: MakeClient):
    api = make_client(case_max_upload_bytes=1024)
    tokens = add_tokens(api)
    response = post_json(api, tokens, as_json(case_inputs()))
    assert response.status_code == 413, response.text
    assert error_of(response)["field"] == "body"


def test_values_that_overflow_the_reference_are_refused(api: TestClient, tokens: Tokens):
    inputs = case_inputs()
    # Finite inputs, but the scores q.k reach 1e600: infinity, and inf - inf is NaN.
    inputs["Q"], inputs["K"] = inputs["Q"] * 1e300, inputs["K"] * 1e300
    error = assert_rejected(api, tokens, post_json(api, tokens, as_json(inputs)), "inputs")
    assert "reference" in error["message"]


# -- the expected output ---------------------------------------------------------------------


def test_an_expected_output_that_disagrees_is_refused_with_the_largest_difference(
    api: TestClient, tokens: Tokens, mha: Any
):
    inputs = case_inputs()
    reference = mha.solve(inputs)
    wrong = reference.copy()
    wrong[1, 2, 3] += 0.25
    wrong[0, 0, 0] += 0.125
    response = post_json(api, tokens, as_json(inputs), expected=wrong.tolist())
    error = assert_rejected(api, tokens, response, "expected")
    assert "largest difference 0.25 at index [1, 2, 3]" in error["message"], error


def test_an_expected_output_of_the_wrong_shape_is_refused(api: TestClient, tokens: Tokens):
    response = post_json(api, tokens, as_json(case_inputs()), expected=[[1.0, 2.0]])
    error = assert_rejected(api, tokens, response, "expected")
    assert "shape" in error["message"]


def test_an_expected_output_that_agrees_is_accepted(api: TestClient, tokens: Tokens, mha: Any):
    inputs = case_inputs()
    response = post_json(api, tokens, as_json(inputs), expected=mha.solve(inputs).tolist())
    assert response.status_code == 201, response.text


# -- the case's own fields -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": "has space"}, "name"),
        ({"name": ""}, "name"),
        ({"visibility": "secret"}, "visibility"),
        ({"weight": 0}, "weight"),
        ({"weight": -1}, "weight"),
        ({"weight": 1e9}, "weight"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_case_fields_are_checked(
    api: TestClient, tokens: Tokens, fields: dict[str, Any], field: str
):
    body = {"name": "case-1", "inputs": as_json(case_inputs()), **fields}
    response = api.post(CASES, json=body, headers=bearer(tokens.admin))
    assert_rejected(api, tokens, response, field)


def test_a_built_in_case_or_probe_name_is_taken(api: TestClient, tokens: Tokens):
    for name in ("two-heads", "probe-large"):
        body = {"name": name, "inputs": as_json(case_inputs())}
        response = api.post(CASES, json=body, headers=bearer(tokens.admin))
        assert_rejected(api, tokens, response, "name", status=409)


def test_a_name_is_unique_among_live_cases_and_free_again_after_removal(
    api: TestClient, tokens: Tokens
):
    body = {"name": "twice", "inputs": as_json(case_inputs())}
    first = api.post(CASES, json=body, headers=bearer(tokens.admin))
    assert first.status_code == 201
    again = api.post(CASES, json=body, headers=bearer(tokens.admin))
    assert again.status_code == 409 and error_of(again)["field"] == "name"
    api.delete(f"{CASES}/{first.json()['id']}", headers=bearer(tokens.admin))
    assert api.post(CASES, json=body, headers=bearer(tokens.admin)).status_code == 201


def test_a_body_that_is_not_json_is_400(api: TestClient, tokens: Tokens):
    response = post_raw(api, tokens, "{not json")
    assert response.status_code == 400


def test_other_content_types_are_415(api: TestClient, tokens: Tokens):
    headers = {**bearer(tokens.admin), "Content-Type": "text/plain"}
    response = api.post(CASES, content=b"hello", headers=headers)
    assert response.status_code == 415


# -- .npz uploads ----------------------------------------------------------------------------


def test_an_npz_upload_is_stored(api: TestClient, tokens: Tokens):
    inputs = case_inputs(seed=3)
    response = post_npz(
        api, tokens, npz_bytes(**inputs), visibility="public", weight="2.5", name="from-npz"
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["name"] == "from-npz" and body["visibility"] == "public"
    assert body["weight"] == 2.5
    assert body["shapes"]["K"] == [2, 4, 6] and body["scalars"] == {"num_heads": 2}
    detail = api.get(f"{CASES}/{body['id']}", headers=bearer(tokens.admin)).json()
    np.testing.assert_array_equal(np.array(detail["inputs"]["Q"]), inputs["Q"])


def test_npz_arrays_must_be_float64(api: TestClient, tokens: Tokens):
    inputs = case_inputs()
    inputs["W_v"] = inputs["W_v"].astype(np.float32)
    error = assert_rejected(api, tokens, post_npz(api, tokens, npz_bytes(**inputs)), "inputs.W_v")
    assert "float64" in error["message"]


def test_npz_num_heads_must_be_an_integer_scalar(api: TestClient, tokens: Tokens):
    inputs = {**case_inputs(), "num_heads": np.float64(2.0)}
    assert_rejected(api, tokens, post_npz(api, tokens, npz_bytes(**inputs)), "inputs.num_heads")


def test_npz_object_arrays_are_never_unpickled(api: TestClient, tokens: Tokens, tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self) -> tuple[Any, ...]:
            return (open, (str(marker), "w"))

    inputs: dict[str, Any] = case_inputs()
    inputs["Q"] = np.array([Exploit()], dtype=object)
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=True, **inputs)
    error = assert_rejected(api, tokens, post_npz(api, tokens, buffer.getvalue()), "inputs.Q")
    assert "objects" in error["message"]
    assert not marker.exists(), "the pickle ran"


def test_a_zip_bomb_is_refused_from_its_header(make_client: MakeClient):
    api = make_client(case_max_elements=1000)
    tokens = add_tokens(api)
    # 10^8 float64 zeros claimed by the header; the data is never decompressed.
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10_000, 10_000)}
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("Q.npy", header.getvalue() + b"\0" * 1000)
    error = assert_rejected(api, tokens, post_npz(api, tokens, buffer.getvalue()), "inputs.Q")
    assert "limit is 1000" in error["message"]


def test_a_file_that_is_not_npz_is_refused(api: TestClient, tokens: Tokens):
    assert_rejected(api, tokens, post_npz(api, tokens, b"PK not really"), "file")


def test_an_upload_without_a_file_is_refused(api: TestClient, tokens: Tokens):
    response = api.post(
        CASES,
        data={"name": "x"},
        files={"other": ("a.txt", b"x", "text/plain")},
        headers=bearer(tokens.admin),
    )
    assert response.status_code == 422


def test_npz_expected_is_checked_too(api: TestClient, tokens: Tokens, mha: Any):
    inputs = case_inputs()
    expected = mha.solve(inputs) * 1.01
    response = post_npz(api, tokens, npz_bytes(**inputs, expected=expected))
    error = assert_rejected(api, tokens, response, "expected")
    assert "largest difference" in error["message"]


def test_an_upload_over_the_byte_cap_is_413(make_client: MakeClient):
    api = make_client(case_max_upload_bytes=2048)
    tokens = add_tokens(api)
    response = post_npz(api, tokens, npz_bytes(**case_inputs()))
    assert response.status_code == 413, response.text


def test_a_streamed_upload_without_a_length_is_411(api: TestClient, tokens: Tokens):
    def chunks() -> Any:
        yield b'--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--b--\r\n'

    headers = {**bearer(tokens.admin), "Content-Type": "multipart/form-data; boundary=b"}
    response = api.post(CASES, content=chunks(), headers=headers)
    assert response.status_code == 411, response.text


def test_a_case_over_the_sandbox_s_input_region_is_refused(make_client: MakeClient):
    # 7 arrays of float64 within the element cap, together past the 64 MiB region every run maps
    # (its size must not follow the cases: the submission can read it while its output is shown).
    api = make_client(case_max_elements=2_000_000, case_max_upload_bytes=128 << 20)
    tokens = add_tokens(api)
    d_model, n = 1024, 1400
    inputs: dict[str, Any] = {
        "Q": np.zeros((1, n, d_model)),
        "K": np.zeros((1, n, d_model)),
        "V": np.zeros((1, n, d_model)),
        **{w: np.zeros((d_model, d_model)) for w in ("W_q", "W_k", "W_v", "W_o")},
        "num_heads": np.int64(8),
    }
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **inputs)
    error = assert_rejected(api, tokens, post_npz(api, tokens, buffer.getvalue()), "inputs")
    assert "bytes in the sandbox" in error["message"] and "limit is 67108864" in error["message"]
    # One row fewer of each array is under it: refused only for its size.
    smaller = {k: v[:, : n // 2] if k in ("Q", "K", "V") else v for k, v in inputs.items()}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **smaller)
    assert post_npz(api, tokens, buffer.getvalue()).status_code == 201
