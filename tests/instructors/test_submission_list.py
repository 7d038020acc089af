"""Instructors find practice submissions by problem, verdict, diagnosis, time and account,
page through them newest first, and regrade one or all that match (bounded)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from app.auth.accounts import create_user
from app.auth.tokens import issue_token
from tests.instructors.conftest import PROBLEM, MakeClient, add_tokens, bearer, error_of
from tests.support.api import wait_done
from tests.support.codes import CORRECT, WRONG

LIST = "/api/submissions"
# Not under /api/submissions/: that path names one submission (GET /api/submissions/{id}).
REGRADES = "/api/regrades"


def member_token(api: TestClient, name: str) -> tuple[int, str]:
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        user = create_user(session, f"{name}@example.edu", name)
        _, secret = issue_token(session, user.id, "tj")
        session.commit()
        return user.id, secret


def submit(api: TestClient, code: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    created = api.post(f"/api/problems/{PROBLEM}/submissions", json={"code": code}, headers=headers)
    assert created.status_code == 202, created.text
    # An account's practice is readable by that account only: polled with its token.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        body: dict[str, Any] = api.get(
            f"/api/submissions/{created.json()['id']}", headers=headers
        ).json()
        if body["status"] == "done":
            return body
        time.sleep(0.05)
    raise AssertionError("not graded in 90 s")


def ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [row["id"] for row in response.json()["items"]]


def test_filters_pages_and_who_may_list(make_client: MakeClient):
    api = make_client()
    staff = bearer(add_tokens(api).instructor)
    student_id, student = member_token(api, "student-1")
    anonymous = submit(api, CORRECT)
    wrong = submit(api, WRONG, bearer(student))
    before = datetime.now(UTC)

    everything = api.get(LIST, headers=staff)
    assert ids(everything) == [wrong["id"], anonymous["id"]]  # newest first
    row = everything.json()["items"][0]
    assert row["verdict"] == "wrong_answer" and row["diagnoses"] == ["missing-wo"]
    assert row["user_id"] == student_id and row["user_name"] == "student-1"
    assert row["run"] == 1 and row["status"] == "done" and row["problem_id"] == PROBLEM
    assert everything.json()["items"][1]["user_id"] is None
    assert everything.json()["next_cursor"] is None

    def only(**query: Any) -> list[str]:
        return ids(api.get(LIST, params=query, headers=staff))

    assert only(verdict="wrong_answer") == [wrong["id"]]
    assert only(verdict="accepted") == [anonymous["id"]]
    assert only(diagnosis="missing-wo") == [wrong["id"]]
    assert only(diagnosis="no-scale") == []
    assert only(problem=PROBLEM, user_id=student_id) == [wrong["id"]]
    assert only(problem="softmax-backward") == []
    assert only(since=before.isoformat()) == []
    # A time without a zone is UTC; a number is not a time (pydantic would take it as seconds).
    assert only(until=before.replace(tzinfo=None).isoformat()) == [wrong["id"], anonymous["id"]]
    number = api.get(LIST, params={"until": "0.5"}, headers=staff)
    assert number.status_code == 422 and error_of(number)["field"] == "until"
    assert only(until=before.isoformat(), mode="submit") == [wrong["id"], anonymous["id"]]
    assert only(since=(before - timedelta(hours=1)).isoformat(), status="done") == [
        wrong["id"],
        anonymous["id"],
    ]

    first = api.get(LIST, params={"limit": 1}, headers=staff)
    assert ids(first) == [wrong["id"]]
    cursor = first.json()["next_cursor"]
    second = api.get(LIST, params={"limit": 1, "cursor": cursor}, headers=staff)
    assert ids(second) == [anonymous["id"]] and second.json()["next_cursor"] is None

    # Any cursor of the documented form is a place in the list (here: before everything).
    assert ids(api.get(LIST, params={"cursor": "0~x"}, headers=staff)) == []
    bad_cursor = api.get(LIST, params={"cursor": "not-a-cursor"}, headers=staff)
    assert bad_cursor.status_code == 422 and error_of(bad_cursor)["field"] == "cursor"
    wildcard = api.get(LIST, params={"diagnosis": "%"}, headers=staff)
    assert wildcard.status_code == 422 and error_of(wildcard)["field"] == "diagnosis"

    # A student sees no one's list, not even a list of their own.
    refused = api.get(LIST, headers=bearer(student))
    assert refused.status_code == 403
    assert api.get(LIST).status_code == 401
    assert api.post(REGRADES, headers=bearer(student)).status_code == 403


def test_regrade_all_matching_is_bounded_and_uses_the_one_regrade(make_client: MakeClient):
    api = make_client(regrade_matching_max=1)
    staff = bearer(add_tokens(api).instructor)
    correct = submit(api, CORRECT)
    wrong = submit(api, WRONG)

    too_many = api.post(REGRADES, headers=staff)
    assert too_many.status_code == 422, too_many.text
    assert error_of(too_many)["code"] == "too_many_matching"
    assert "more than 1 submissions match" in error_of(too_many)["message"]

    done = api.post(REGRADES, params={"verdict": "wrong_answer"}, headers=staff)
    assert done.status_code == 202, done.text
    assert done.json() == {"matched": 1, "queued": 1, "skipped": 0, "queue_full": False}
    again = wait_done(api, wrong["id"])
    assert again["verdict"] == "wrong_answer"
    rows = {r["id"]: r for r in api.get(LIST, headers=staff).json()["items"]}
    assert rows[wrong["id"]]["run"] == 2 and rows[correct["id"]]["run"] == 1

    nothing = api.post(REGRADES, params={"diagnosis": "no-scale"}, headers=staff)
    assert nothing.json() == {"matched": 0, "queued": 0, "skipped": 0, "queue_full": False}
