"""A new password takes the account back: a reset, or a change, revokes every personal access
token and ends every session of the account, except (for a change) the session or token that
made it. The person sees their sessions and tokens on /account and can end each."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.accounts.conftest import PASSWORD, error_of, login
from tests.support.people import People

NEW_PASSWORD = "a brand new password"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _signed_in(client: TestClient) -> bool:
    return client.get("/api/auth/me").json()["user"] is not None


def _token_works(api: TestClient, token: str) -> bool:
    return api.get("/api/auth/me", headers=_bearer(token)).status_code == 200


def test_a_reset_revokes_tokens_and_sessions_made_before_it(api: TestClient, people: People):
    # Whoever held the account (here: a browser signed in and a token minted by it) ...
    held = TestClient(api.app)
    csrf = login(held).json()["csrf_token"]
    minted = held.post("/api/account/tokens", json={"name": "kept"}, headers={"X-CSRF-Token": csrf})
    assert minted.status_code == 201
    kept_token = minted.json()["secret"]
    old_token = people.tokens["student"]
    assert _token_works(api, kept_token) and _token_works(api, old_token) and _signed_in(held)
    # ... loses all of it when the owner resets the password.
    link = api.post(
        f"/api/admin/users/{people.users['student']}/reset-link", headers=people.headers("admin")
    ).json()["url"]
    owner = TestClient(api.app)
    reset = owner.post(
        "/api/auth/reset", json={"secret": link.removeprefix("/reset/"), "password": NEW_PASSWORD}
    )
    assert reset.status_code == 200, reset.text
    assert not _token_works(api, kept_token)
    assert not _token_works(api, old_token)
    assert not _signed_in(held)
    assert _signed_in(owner)  # the browser that reset it is signed in
    listed = owner.get("/api/account/tokens").json()
    assert {t["name"] for t in listed} == {"tests", "kept"}
    assert all(t["revoked_at"] is not None for t in listed)


def test_a_change_keeps_only_the_session_that_made_it(api: TestClient, people: People):
    other = TestClient(api.app)
    assert login(other).status_code == 200
    csrf = login(api).json()["csrf_token"]
    token = people.tokens["student"]
    r = api.put(
        "/api/account/password",
        json={"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        headers={"X-CSRF-Token": csrf},
    )
    assert r.status_code == 204, r.text
    assert _signed_in(api)
    assert not _signed_in(other)
    assert not _token_works(api, token)


def test_a_change_made_with_a_token_keeps_that_token_only(api: TestClient, people: People):
    browser = TestClient(api.app)
    assert login(browser).status_code == 200
    first = api.post(
        "/api/auth/token", json={"email": "student@example.edu", "password": PASSWORD, "name": "a"}
    ).json()["secret"]
    second = api.post(
        "/api/auth/token", json={"email": "student@example.edu", "password": PASSWORD, "name": "b"}
    ).json()["secret"]
    r = api.put(
        "/api/account/password",
        json={"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        headers=_bearer(first),
    )
    assert r.status_code == 204, r.text
    assert _token_works(api, first)
    assert not _token_works(api, second)
    assert not _token_works(api, people.tokens["student"])
    assert not _signed_in(browser)


def test_sessions_are_listed_and_ended_by_their_owner_only(api: TestClient, people: People):
    phone = TestClient(api.app)
    assert login(phone).status_code == 200
    csrf = login(api).json()["csrf_token"]
    listed = api.get("/api/account/sessions")
    assert listed.status_code == 200
    sessions = listed.json()
    assert len(sessions) == 2
    assert [s["current"] for s in sessions].count(True) == 1
    phone_id = next(s["id"] for s in sessions if not s["current"])
    # Nothing that finds the cookie is shown.
    assert phone.cookies["tj_session"] not in listed.text
    # A bearer token lists the sessions too, none of them its own.
    by_token = api.get("/api/account/sessions", headers=people.headers("student")).json()
    assert {s["id"] for s in by_token} == {s["id"] for s in sessions}
    assert not any(s["current"] for s in by_token)
    # Another person cannot end them: unknown to them.
    theirs = api.delete(f"/api/account/sessions/{phone_id}", headers=people.headers("instructor"))
    assert theirs.status_code == 404 and error_of(theirs)["code"] == "not_found"
    assert _signed_in(phone)
    ended = api.delete(f"/api/account/sessions/{phone_id}", headers={"X-CSRF-Token": csrf})
    assert ended.status_code == 204
    assert not _signed_in(phone)
    assert _signed_in(api)
    assert [s["current"] for s in api.get("/api/account/sessions").json()] == [True]
    again = api.delete(f"/api/account/sessions/{phone_id}", headers={"X-CSRF-Token": csrf})
    assert again.status_code == 404
