"""The read API serves problems and nothing hidden."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.core.config import Settings
from app.main import create_app
from app.problems.loader import Problem
from sandbox.backends.runtime import find_torch
from tests.conftest import PROBLEMS_DIR


def test_healthz(client: TestClient):
    assert client.get("/healthz").json() == {"status": "ok"}


def test_list_problems(client: TestClient):
    response = client.get("/api/problems")
    assert response.status_code == 200
    (entry,) = [p for p in response.json() if p["id"] == "multi-head-attention"]
    assert set(entry) == {"id", "title", "difficulty", "summary"}
    assert entry["difficulty"] == "medium"


def test_get_problem(client: TestClient, mha: Problem):
    body = client.get("/api/problems/multi-head-attention").json()
    assert body["function_name"] == "multi_head_attention"
    assert body["signature"] == (
        "multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads) -> np.ndarray"
    )
    assert [r["id"] for r in body["requirements"]] == [
        "project-qkv",
        "split-heads",
        "scale-scores",
        "softmax-keys",
        "merge-and-project",
    ]
    assert (
        "$\\sqrt{d_k}$" in body["statement_markdown"] or "\\sqrt{d_k}" in body["statement_markdown"]
    )
    assert "def multi_head_attention" in body["starter_code"]
    assert body["limits"] == {"cpu_seconds": 5.0, "wall_seconds": 10.0, "memory_mb": 512}
    assert len(body["examples"]) == len(mha.examples) >= 1
    example = body["examples"][0]
    np.testing.assert_allclose(
        np.array(example["output"]),
        mha.reference(
            *(
                np.array(example["inputs"][p.name])
                if p.kind == "array"
                else example["inputs"][p.name]
                for p in mha.spec.params
            )
        ),
    )


def test_unknown_problem_is_a_json_404(client: TestClient):
    response = client.get("/api/problems/no-such-problem")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "problem_not_found",
            "message": "no problem with id 'no-such-problem'",
            "field": "problem_id",
        }
    }


def test_unknown_route_is_a_json_404(client: TestClient):
    response = client.get("/api/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def _every_get_response(client: TestClient) -> list[str]:
    """Bodies of every GET route the app declares, plus guesses at where files might leak."""
    bodies = []
    for path, ops in client.get("/openapi.json").json()["paths"].items():
        if "get" in ops:
            bodies.append(client.get(path.replace("{problem_id}", "multi-head-attention")).text)
    for guess in (
        "/problems/multi-head-attention/reference.py",
        "/api/problems/multi-head-attention/reference.py",
        "/api/problems/multi-head-attention/../multi-head-attention/reference.py",
        "/static/../problems/multi-head-attention/reference.py",
        "/docs",
        "/redoc",
    ):
        bodies.append(client.get(guess).text)
    return bodies


def test_hidden_material_never_leaks(client: TestClient, mha: Problem):
    bodies = "\n".join(_every_get_response(client))
    reference_source = (mha.directory / "reference.py").read_text()
    assert "scores.max(axis=-1, keepdims=True)" in reference_source
    assert "scores.max(axis=-1, keepdims=True)" not in bodies
    assert "hidden_cases" not in bodies
    # No hidden case's inputs or expected output appear, in any of the ways JSON could print them.
    for case in mha.hidden:
        for value in (case.inputs["Q"].flat[0], case.inputs["W_o"].flat[-1], case.expected.flat[0]):
            assert json.dumps(float(value)) not in bodies, case.name
        assert case.name not in bodies


def test_unsafe_process_sandbox_is_refused_without_opt_in_and_warned_with_it(tmp_path, caplog):
    with pytest.raises(ValidationError, match="GRADER_ALLOW_UNSAFE_SANDBOX=1"):
        Settings(sandbox="process", data_dir=tmp_path, problems_dir=PROBLEMS_DIR)
    settings = Settings(
        sandbox="process", allow_unsafe_sandbox=True, data_dir=tmp_path, problems_dir=PROBLEMS_DIR
    )
    with caplog.at_level(logging.WARNING, logger="app.main"):
        create_app(settings)
    assert any("WITHOUT isolation" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="app.main"):
        create_app(Settings(data_dir=tmp_path, problems_dir=PROBLEMS_DIR))
    assert not any("WITHOUT isolation" in r.getMessage() for r in caplog.records)


def test_a_server_that_does_not_offer_torch_says_so_and_grades_numpy(tmp_path):
    """GRADER_OFFER_TORCH=false: the starters are NumPy's alone, the problem lists PyTorch as
    unavailable, and a torch submission is graded as NumPy (as where torch is not installed)."""
    from app.grading.pipeline import build_request

    settings = Settings(
        data_dir=tmp_path / "data",
        problems_dir=PROBLEMS_DIR,
        sandbox_prime=False,
        offer_torch=False,
    )
    with TestClient(create_app(settings)) as client:
        body = client.get("/api/problems/masked-attention").json()
        problem = client.app.state.problems["masked-attention"]  # type: ignore[attr-defined]
    assert list(body["starters"]) == ["numpy"]
    assert body["frameworks_unavailable"] == ["torch"]
    assert problem.frameworks == ("numpy",)
    request = build_request(problem, "import torch\n", problem.examples[:1], "torch")
    assert request.framework == "numpy" and request.limits.runtime_mb == 0


@pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")
def test_where_torch_is_installed_and_offered_nothing_is_unavailable(client: TestClient):
    body = client.get("/api/problems/masked-attention").json()
    assert list(body["starters"]) == ["numpy", "torch"]
    assert body["frameworks_unavailable"] == []
