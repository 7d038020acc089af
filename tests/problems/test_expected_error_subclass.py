"""An expected error is met by a subclass of the required type, on public and hidden cases alike
(graded in the real sandbox on the contract demo, whose blocked-row and all-blocked cases
require ValueError); an unrelated type still fails. On a hidden case the sandbox names a type
outside its short list by its nearest listed base, never by the submission's own name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sandbox.inside.errors import bases_of, error_category
from tests.support.api import grade_at
from tests.support.codes import CONTRACT_DEMO_CORRECT
from tests.support.folders import serving_folder

FIXTURES = Path(__file__).parent / "fixtures"
URL = "/api/problems/contract-demo"
RAISE = 'raise ValueError("a query with every key blocked")'


class ShapeError(ValueError):
    pass


def test_a_hidden_error_outside_the_list_is_named_by_its_nearest_listed_base():
    try:
        raise ShapeError("the submission's words")
    except ShapeError as exc:
        bases = bases_of(exc)
    assert bases[0] == "ValueError" and "Exception" in bases
    error = {"type": f"{__name__}.ShapeError", "message": "x", "traceback": "y", "bases": bases}
    assert error_category(error) == {
        "type": "ValueError",
        "message": "",
        "traceback": "",
        "bases": ["ValueError", "Exception"],
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with serving_folder(tmp_path_factory.mktemp("subclass"), FIXTURES) as client:
        yield client


def statuses(body: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: t["status"] for t in body["tests"]}


def test_a_subclass_of_the_required_error_passes_public_and_hidden_cases(api: TestClient):
    code = "class BlockedRow(ValueError):\n    pass\n\n" + CONTRACT_DEMO_CORRECT.replace(
        RAISE, 'raise BlockedRow("a query with every key blocked")'
    )
    body = grade_at(api, URL, code)
    # Accepted: every case passed, the hidden one requiring ValueError too.
    assert body["verdict"] == "accepted", body
    assert set(statuses(body).values()) == {"passed"}


def test_an_unrelated_error_still_fails(api: TestClient):
    code = "class BlockedRow(Exception):\n    pass\n\n" + CONTRACT_DEMO_CORRECT.replace(
        RAISE, 'raise BlockedRow("a query with every key blocked")'
    )
    body = grade_at(api, URL, code)
    assert body["verdict"] != "accepted"
    hidden = [t for t in body["tests"] if t["visibility"] == "hidden" and t["status"] != "passed"]
    assert len(hidden) == 1  # the hidden all-blocked case; every other hidden case passes
    blocked = next(t for t in body["tests"] if t["name"] == "blocked-row")
    assert "expected the function to raise ValueError" in blocked["message"]
