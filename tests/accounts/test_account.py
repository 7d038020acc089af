"""One's own account: personal access tokens (list, create once-shown, revoke only one's own)
and the password change."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.accounts.conftest import PASSWORD, error_of, login
from tests.support.people import People


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_tokens_are_listed_created_and_revoked_by_their_owner(api: TestClient, people: People):
    student = people.headers("student")
    r = api.post("/api/account/tokens", json={"name": "laptop"}, headers=student)
    assert r.status_code == 201
    created = r.json()
    secret = created["secret"]
    assert secret.startswith("tj_")
    listing = api.get("/api/account/tokens", headers=student).json()
    assert [t["name"] for t in listing] == ["tests", "laptop"]
    assert secret not in str(listing)
    # The new token works, as the student.
    me = api.get("/api/auth/me", headers=_bearer(secret)).json()
    assert me["user"]["id"] == people.users["student"]
    # Same name twice: 409.
    dup = api.post("/api/account/tokens", json={"name": "laptop"}, headers=student)
    assert dup.status_code == 409
    # Another person cannot see or revoke it.
    other = people.headers("student_b")
    assert "laptop" not in str(api.get("/api/account/tokens", headers=other).json())
    r = api.delete(f"/api/account/tokens/{created['token']['id']}", headers=other)
    assert r.status_code == 404
    assert api.get("/api/auth/me", headers=_bearer(secret)).status_code == 200
    # The owner revokes it: refused at once.
    r = api.delete(f"/api/account/tokens/{created['token']['id']}", headers=student)
    assert r.status_code == 204
    assert api.get("/api/auth/me", headers=_bearer(secret)).status_code == 403
    again = api.delete(f"/api/account/tokens/{created['token']['id']}", headers=student)
    assert again.status_code == 404


def test_account_routes_need_an_account(api: TestClient, people: People):
    for method, path in (
        ("GET", "/api/account/tokens"),
        ("POST", "/api/account/tokens"),
        ("DELETE", "/api/account/tokens/1"),
        ("PUT", "/api/account/password"),
    ):
        r = api.request(method, path, json={})
        assert r.status_code == 401, (method, path)
        assert error_of(r)["code"] == "unauthenticated"


def test_token_exchange_makes_a_token_under_the_throttle(api: TestClient, people: People):
    r = api.post(
        "/api/auth/token",
        json={"email": "student@example.edu", "password": PASSWORD, "name": "tj on laptop"},
    )
    assert r.status_code == 201, r.text
    secret = r.json()["secret"]
    assert api.get("/api/auth/me", headers=_bearer(secret)).json()["user"]["name"] == "Student"
    assert "set-cookie" not in r.headers
    bad = api.post(
        "/api/auth/token", json={"email": "student@example.edu", "password": "wrong one!!"}
    )
    assert bad.status_code == 401 and error_of(bad)["code"] == "invalid_credentials"


def test_password_change(api: TestClient, people: People):
    other_browser = TestClient(api.app)
    assert login(other_browser).status_code == 200
    csrf = login(api).json()["csrf_token"]
    headers = {"X-CSRF-Token": csrf}
    short = api.put(
        "/api/account/password",
        json={"current_password": PASSWORD, "new_password": "short"},
        headers=headers,
    )
    assert short.status_code == 422 and error_of(short)["field"] == "new_password"
    assert "at least 10" in error_of(short)["message"]
    huge = api.put(
        "/api/account/password",
        json={"current_password": PASSWORD, "new_password": "é" * 600},
        headers=headers,
    )
    assert huge.status_code == 422 and "1024 bytes" in error_of(huge)["message"]
    wrong = api.put(
        "/api/account/password",
        json={"current_password": "not my password", "new_password": "a new long password"},
        headers=headers,
    )
    assert wrong.status_code == 401
    ok = api.put(
        "/api/account/password",
        json={"current_password": PASSWORD, "new_password": "a new long password"},
        headers=headers,
    )
    assert ok.status_code == 204
    # This browser stays signed in; the other one is signed out.
    assert api.get("/api/auth/me").json()["user"] is not None
    assert other_browser.get("/api/auth/me").json()["user"] is None
    api.cookies.clear()
    assert login(api).status_code == 401
    assert login(api, password="a new long password").status_code == 200


def test_token_use_is_recorded(api: TestClient, people: People):
    student = people.headers("student")
    before = api.get("/api/account/tokens", headers=student).json()[0]
    # This very request used the token: it is recorded (at most every few minutes).
    assert before["last_used_at"] is not None
    assert before["revoked_at"] is None
