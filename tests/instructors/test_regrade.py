"""Regrading: a finished submission is graded again, for real, on the current test set."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.submissions.models import Grading, Submission
from tests.instructors.conftest import (
    CASES,
    PROBLEM,
    MakeClient,
    add_tokens,
    as_json,
    bearer,
    case_inputs,
    error_of,
)
from tests.support.api import wait_done
from tests.support.codes import BATCH_FIVE_BUG, CORRECT, TIMEOUT


def test_regrade_grades_again_on_the_current_set(make_client: MakeClient, database_url: str | None):
    api = make_client(database_url)
    headers = bearer(add_tokens(api).admin)
    created = api.post(f"/api/problems/{PROBLEM}/submissions", json={"code": BATCH_FIVE_BUG})
    first = wait_done(api, created.json()["id"])
    assert first["verdict"] == "accepted" and first["test_set_version"] == 1

    case = {"name": "batch-5", "inputs": as_json(case_inputs(seed=11, batch=5))}
    assert api.post(CASES, json=case, headers=headers).status_code == 201

    response = api.post(f"/api/submissions/{first['id']}/regrade", headers=headers)
    assert response.status_code == 202, response.text
    assert response.json() == {"id": first["id"], "status": "queued", "run": 2}
    assert response.headers["location"] == f"/api/submissions/{first['id']}"
    second = wait_done(api, first["id"])
    assert second["verdict"] == "wrong_answer"
    assert second["test_set_version"] == 2
    # Hidden cases are reported without their names: the new one is the 12th case.
    assert len(first["tests"]) == 11 and len(second["tests"]) == 12
    failed = [t for t in second["tests"] if t["status"] != "passed"]
    assert len(failed) == 1 and failed[0]["visibility"] == "hidden"
    assert failed[0]["expected_shape"] == [5, 3, 6]
    assert second["created_at"] == first["created_at"]

    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        runs = session.scalars(
            select(Grading).where(Grading.submission_id == first["id"]).order_by(Grading.run)
        ).all()
        history = [(g.run, g.verdict, g.test_set_version) for g in runs]
    assert history == [(1, "accepted", 1), (2, "wrong_answer", 2)]


def test_regrade_refuses_a_submission_still_being_graded(api: TestClient):
    headers = bearer(add_tokens(api).admin)
    created = api.post(f"/api/problems/{PROBLEM}/submissions", json={"code": TIMEOUT})
    submission_id = created.json()["id"]
    response = api.post(f"/api/submissions/{submission_id}/regrade", headers=headers)
    assert response.status_code == 409, response.text
    assert error_of(response)["code"] == "submission_not_done"
    wait_done(api, submission_id)


def test_regrade_of_an_unknown_submission_is_404(api: TestClient):
    headers = bearer(add_tokens(api).admin)
    response = api.post("/api/submissions/nope/regrade", headers=headers)
    assert response.status_code == 404
    assert error_of(response)["field"] == "submission_id"


def test_batch_five_bug_is_really_only_wrong_on_batch_five(mha):
    # Guards the regrade test's premise with the reference itself.
    namespace: dict[str, object] = {}
    exec(BATCH_FIVE_BUG, namespace)
    fn = namespace["multi_head_attention"]
    for batch in (2, 5):
        inputs = case_inputs(seed=11, batch=batch)
        same = np.allclose(fn(**inputs), mha.solve(inputs))  # type: ignore[operator]
        assert same == (batch != 5)


def test_regrade_is_refused_while_the_queue_is_full(
    make_client: MakeClient, database_url: str | None
):
    api = make_client(database_url, queue_max=1, workers=1)
    headers = bearer(add_tokens(api).admin)
    done = wait_done(
        api, api.post(f"/api/problems/{PROBLEM}/submissions", json={"code": CORRECT}).json()["id"]
    )
    # Runs for its whole CPU limit: the one place in the queue stays taken meanwhile.
    busy = api.post(f"/api/problems/{PROBLEM}/submissions", json={"code": TIMEOUT})
    assert busy.status_code == 202

    response = api.post(f"/api/submissions/{done['id']}/regrade", headers=headers)
    assert response.status_code == 503, response.text
    assert error_of(response) == {
        "code": "queue_full",
        "message": "too many submissions are waiting; retry later",
        "field": None,
    }
    assert int(response.headers["retry-after"]) >= 1
    # Refused means untouched: still done with its first result, no second run queued.
    assert api.get(f"/api/submissions/{done['id']}").json() == done
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        row = session.get(Submission, done["id"])
        assert row is not None and (row.status, row.run) == ("done", 1)

    assert wait_done(api, busy.json()["id"])["verdict"] == "time_limit_exceeded"
    response = api.post(f"/api/submissions/{done['id']}/regrade", headers=headers)
    assert response.status_code == 202, response.text
    assert response.json()["run"] == 2
    assert wait_done(api, done["id"])["verdict"] == "accepted"
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        runs = session.scalars(select(Grading.run).where(Grading.submission_id == done["id"]))
        assert sorted(runs) == [1, 2]


def test_a_full_queue_is_documented_on_the_regrade_route(api: TestClient):
    route = api.get("/openapi.json").json()["paths"]["/api/submissions/{submission_id}/regrade"]
    full = route["post"]["responses"]["503"]
    assert "Retry-After" in full["headers"]
    assert full["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
