"""Who may do what: the full matrix over every instructor route, and how tokens are stored."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.auth.models import ApiToken
from app.auth.tokens import authenticate, create_token, revoke_token
from tests.instructors.conftest import (
    CASES,
    PROBLEM,
    MakeClient,
    Tokens,
    add_tokens,
    as_json,
    bearer,
    case_inputs,
    error_of,
)

Call = Callable[[TestClient, dict[str, str]], Any]


def _add_case(api: TestClient, headers: dict[str, str]) -> Any:
    return api.post(
        CASES, json={"name": "auth-case", "inputs": as_json(case_inputs())}, headers=headers
    )


def _stored_case_id(api: TestClient, tokens: Tokens) -> int:
    response = api.post(
        CASES,
        json={"name": "to-delete", "inputs": as_json(case_inputs(seed=9))},
        headers=bearer(tokens.admin),
    )
    assert response.status_code == 201, response.text
    case_id: int = response.json()["id"]
    return case_id


# (name, call, status for an admin, status for a deployment instructor). The regrade target
# does not exist: a 404 shows the request got past authentication. The catalog's cases grade
# every course: only administrators change them.
ROUTES: list[tuple[str, Callable[[TestClient, Tokens, dict[str, str]], Any], int, int]] = [
    ("POST test-cases", lambda api, t, h: _add_case(api, h), 201, 403),
    (
        "DELETE test-cases/{id}",
        lambda api, t, h: api.delete(f"{CASES}/{_stored_case_id(api, t)}", headers=h),
        200,
        403,
    ),
    (
        "GET diagnosability",
        lambda api, t, h: api.get(f"/api/problems/{PROBLEM}/diagnosability", headers=h),
        200,
        200,
    ),
    (
        "GET stats",
        lambda api, t, h: api.get(f"/api/problems/{PROBLEM}/stats", headers=h),
        200,
        200,
    ),
    (
        "POST regrade",
        lambda api, t, h: api.post("/api/submissions/no-such-id/regrade", headers=h),
        404,
        404,
    ),
]


def _headers(kind: str, tokens: Tokens) -> dict[str, str]:
    return {
        "none": {},
        "wrong": bearer("tj_" + "x" * 43),
        "revoked": bearer(tokens.revoked),
        "not-bearer": {"Authorization": f"Basic {tokens.instructor}"},
        "instructor": bearer(tokens.instructor),
        "admin": bearer(tokens.admin),
    }[kind]


@pytest.mark.parametrize(
    ("route", "call", "allowed", "for_instructor"), ROUTES, ids=[r[0] for r in ROUTES]
)
@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("none", 401),
        ("not-bearer", 401),
        ("wrong", 403),
        ("revoked", 403),
        ("instructor", None),
        ("admin", None),
    ],
)
def test_auth_matrix(
    api: TestClient,
    tokens: Tokens,
    route: str,
    call: Callable[[TestClient, Tokens, dict[str, str]], Any],
    allowed: int,
    for_instructor: int,
    who: str,
    status: int | None,
):
    response = call(api, tokens, _headers(who, tokens))
    want = (for_instructor if who == "instructor" else allowed) if status is None else status
    assert response.status_code == want, (route, who, response.text)
    if want == 401:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert error_of(response)["code"] == "unauthenticated"
    if want == 403:
        assert error_of(response)["code"] == "forbidden"


def test_students_list_only_public_cases_and_instructors_all(api: TestClient, tokens: Tokens):
    for name, visibility in (("secret-case", "hidden"), ("open-case", "public")):
        body = {"name": name, "visibility": visibility, "inputs": as_json(case_inputs())}
        assert api.post(CASES, json=body, headers=bearer(tokens.admin)).status_code == 201
    student = {c["name"]: c for c in api.get(CASES).json()["cases"]}
    assert "open-case" in student and "secret-case" not in student
    assert {c["visibility"] for c in student.values()} == {"public"}
    assert student["open-case"]["created_by"] is None, "who wrote a case is for instructors"
    teacher = {c["name"] for c in api.get(CASES, headers=bearer(tokens.instructor)).json()["cases"]}
    assert {"open-case", "secret-case", "self-2-heads"} <= teacher
    assert api.get(CASES, headers=bearer(tokens.revoked)).status_code == 403


def test_students_read_public_cases_but_not_hidden_ones(api: TestClient, tokens: Tokens):
    ids = {}
    for name, visibility in (("secret-case", "hidden"), ("open-case", "public")):
        body = {"name": name, "visibility": visibility, "inputs": as_json(case_inputs())}
        ids[name] = api.post(CASES, json=body, headers=bearer(tokens.admin)).json()["id"]
    assert api.get(f"{CASES}/{ids['open-case']}").status_code == 200
    assert api.get(f"{CASES}/{ids['secret-case']}").status_code == 404
    detail = api.get(f"{CASES}/{ids['secret-case']}", headers=bearer(tokens.instructor))
    assert detail.status_code == 200 and len(detail.json()["expected"]) == 2


def test_submitting_needs_no_token(api: TestClient):
    response = api.post(f"/api/problems/{PROBLEM}/submissions", json={"code": "x = 1"})
    assert response.status_code == 202


def test_tokens_are_stored_as_sha256_only(api: TestClient):
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    with sessions() as session:
        row, secret = create_token(session, "hash-check", "instructor")
        session.commit()
    with sessions() as session:
        stored = session.scalars(select(ApiToken).where(ApiToken.id == row.id)).one()
        columns = [str(getattr(stored, c.key)) for c in ApiToken.__table__.columns]
    assert stored.token_sha256 == hashlib.sha256(secret.encode()).hexdigest()
    assert not any(secret in value for value in columns), "the secret itself is never stored"
    assert len(secret) >= 40, "at least 256 bits of randomness, URL-safe"


def test_revoking_takes_effect_at_once_and_names_are_unique(api: TestClient):
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    with sessions() as session:
        _, secret = create_token(session, "short-lived", "instructor")
        session.commit()
        assert authenticate(session, secret) is not None
        with pytest.raises(ValueError, match="already exists"):
            create_token(session, "short-lived", "admin")
    stats = f"/api/problems/{PROBLEM}/stats"
    assert api.get(stats, headers=bearer(secret)).status_code == 200
    with sessions() as session:
        assert revoke_token(session, name="short-lived")
        session.commit()
    assert api.get(stats, headers=bearer(secret)).status_code == 403
    with sessions() as session:
        assert not revoke_token(session, name="short-lived"), "already revoked"


def test_unknown_role_is_refused(api: TestClient):
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    with sessions() as session, pytest.raises(ValueError, match="role"):
        create_token(session, "someone", "student")


def test_submissions_with_a_token_are_rate_limited_per_token(make_client: MakeClient):
    # Behind a proxy every client shares one address: a token is its own client.
    api = make_client(rate_limit=1, rate_window_seconds=120)
    tokens = add_tokens(api)
    url = f"/api/problems/{PROBLEM}/submissions"
    code = {"code": "def multi_head_attention(*args):\n    return 0\n"}
    assert api.post(url, json=code).status_code == 202
    assert api.post(url, json=code).status_code == 429
    assert api.post(url, json=code, headers=bearer(tokens.instructor)).status_code == 202
    assert api.post(url, json=code, headers=bearer(tokens.admin)).status_code == 202
    limited = api.post(url, json=code, headers=bearer(tokens.instructor))
    assert limited.status_code == 429
    assert error_of(limited)["code"] == "rate_limited"
    # A bad token is refused, not silently counted as the address.
    assert api.post(url, json=code, headers=bearer("tj_not-a-token")).status_code == 403
