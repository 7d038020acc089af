"""Signing in and out with email and password: the cookie, one answer for every wrong
credential, the throttle, and the cross-site refusals."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from app.auth.models import LoginFailure
from app.auth.sessions import COOKIE
from tests.accounts.conftest import PASSWORD, MakeClient, error_of, login, set_password
from tests.support.people import People, seed_people


def test_login_sets_a_strict_cookie_and_answers_who(api: TestClient, people: People):
    started = time.perf_counter()
    r = login(api)
    elapsed = time.perf_counter() - started
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["user"]["email"] == "student@example.edu"
    assert body["user"]["role"] == "member"
    assert body["csrf_token"]
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    lowered = cookie.lower()
    assert "httponly" in lowered and "samesite=lax" in lowered and "path=/" in lowered
    assert f"max-age={14 * 24 * 3600}" in lowered
    assert "secure" not in lowered  # development, plain http
    # argon2 verification is the whole cost of a sign-in
    print(f"login with argon2: {elapsed * 1000:.0f} ms")
    me = api.get("/api/auth/me").json()
    assert me["user"]["id"] == people.users["student"]
    assert me["csrf_token"] == body["csrf_token"]


def test_cookie_is_secure_in_production_or_when_set(make_client: MakeClient):
    for overrides in ({"session_cookie_secure": True}, {"env": "production"}):
        client = make_client(**overrides)
        found = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
        set_password(client, found.users["student"])
        r = login(client)
        assert r.status_code == 200
        assert "secure" in r.headers["set-cookie"].lower()


def test_wrong_email_and_wrong_password_get_one_answer(api: TestClient, people: People):
    wrong_password = login(api, password="not the password")
    unknown = login(api, email="nobody@example.edu")
    not_an_email = login(api, email="nobody")
    no_password_account = login(api, email="ta@example.edu")  # has no password set
    answers = [error_of(r) for r in (wrong_password, unknown, not_an_email, no_password_account)]
    assert all(r.status_code == 401 for r in (wrong_password, unknown, not_an_email))
    assert no_password_account.status_code == 401
    assert all(a == answers[0] for a in answers), answers
    assert COOKIE not in api.cookies
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        assert session.query(LoginFailure).count() == 4


def test_throttle_per_email_even_for_the_right_password(make_client: MakeClient):
    client = make_client(login_max_failures_per_email=3, login_window_seconds=600)
    people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
    set_password(client, people.users["student"])
    set_password(client, people.users["outsider"])
    for _ in range(3):
        assert login(client, password="wrong password!").status_code == 401
    r = login(client)  # the right password, still refused
    assert r.status_code == 429
    assert error_of(r)["code"] == "too_many_attempts"
    assert 1 <= int(r.headers["Retry-After"]) <= 600
    # Signing into another (the attacker's own) account works and resets nothing.
    assert login(client, email="outsider@example.edu").status_code == 200
    assert login(client).status_code == 429


def test_throttle_per_address(make_client: MakeClient):
    client = make_client(login_max_failures_per_address=4, login_max_failures_per_email=100)
    people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
    set_password(client, people.users["student"])
    for i in range(4):
        assert login(client, email=f"guess{i}@example.edu").status_code == 401
    r = login(client)
    assert r.status_code == 429 and "Retry-After" in r.headers


def test_throttle_ends_after_the_window(make_client: MakeClient):
    # Each failure counts from when it was tried (before argon2 ran): the window is wide enough
    # for two verifications on a loaded machine, and the wait is the one the answer gives.
    client = make_client(login_max_failures_per_email=2, login_window_seconds=4)
    people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
    set_password(client, people.users["student"])
    for _ in range(2):
        login(client, password="wrong password!")
    refused = login(client)
    assert refused.status_code == 429
    time.sleep(int(refused.headers["Retry-After"]) + 0.1)
    assert login(client).status_code == 200


def test_login_refuses_a_cross_site_form(api: TestClient, people: People):
    form = api.post("/api/auth/login", data={"email": "student@example.edu", "password": PASSWORD})
    assert form.status_code == 415
    text = api.post(
        "/api/auth/login",
        content=f'{{"email": "student@example.edu", "password": "{PASSWORD}"}}',
        headers={"Content-Type": "text/plain"},
    )
    assert text.status_code == 415
    body = {"email": "student@example.edu", "password": PASSWORD}
    other_origin = api.post("/api/auth/login", json=body, headers={"Origin": "https://evil.test"})
    assert other_origin.status_code == 403 and error_of(other_origin)["code"] == "cross_site"
    cross = api.post("/api/auth/login", json=body, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    same = api.post(
        "/api/auth/login",
        json=body,
        headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
    )
    assert same.status_code == 200
    for r in (form, text, other_origin, cross):
        assert "set-cookie" not in r.headers
    # Behind a proxy that rewrites Host: its X-Forwarded-Host names the site.
    proxied = api.post(
        "/api/auth/login",
        json=body,
        headers={"Origin": "https://judge.example.edu", "X-Forwarded-Host": "judge.example.edu"},
    )
    assert proxied.status_code == 200


def test_login_body_errors(api: TestClient, people: People):
    r = api.post("/api/auth/login", json={"email": "a@b.cd"})
    assert r.status_code == 422 and error_of(r)["field"] == "password"
    r = api.post("/api/auth/login", json={"email": "a@b.cd", "password": "x" * 1025})
    assert r.status_code == 422
    r = api.post(
        "/api/auth/login",
        content=b"{" * 70_000,
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 413


def test_logout_needs_csrf_and_ends_the_session(api: TestClient, people: People):
    csrf = login(api).json()["csrf_token"]
    r = api.post("/api/auth/logout")
    assert r.status_code == 403 and error_of(r)["code"] == "csrf_failed"
    assert api.get("/api/auth/me").json()["user"] is not None
    r = api.post("/api/auth/logout", headers={"X-CSRF-Token": csrf})
    assert r.status_code == 204
    assert (
        'tj_session=""' in r.headers["set-cookie"] or "max-age=0" in r.headers["set-cookie"].lower()
    )
    assert api.get("/api/auth/me").json() == {"user": None, "csrf_token": None}


def test_session_cookie_cannot_change_state_without_csrf(api: TestClient, people: People):
    csrf = login(api).json()["csrf_token"]
    r = api.post("/api/account/tokens", json={"name": "laptop"})
    assert r.status_code == 403 and error_of(r)["code"] == "csrf_failed"
    r = api.post("/api/account/tokens", json={"name": "laptop"}, headers={"X-CSRF-Token": "x"})
    assert r.status_code == 403
    r = api.post("/api/account/tokens", json={"name": "laptop"}, headers={"X-CSRF-Token": csrf})
    assert r.status_code == 201


def test_disabled_account_is_refused_at_once(api: TestClient, people: People):
    csrf = login(api).json()["csrf_token"]
    assert csrf
    token = people.tokens["student"]
    assert (
        api.get("/api/account/tokens", headers={"Authorization": f"Bearer {token}"}).status_code
        == 200
    )
    r = api.patch(
        f"/api/admin/users/{people.users['student']}",
        json={"disabled": True},
        headers=people.headers("admin"),
    )
    assert r.status_code == 200 and r.json()["disabled"] is True
    assert api.get("/api/auth/me").json()["user"] is None  # the session is gone
    r = api.get("/api/account/tokens", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 403
    api.cookies.clear()
    r = login(api)
    assert r.status_code == 403 and error_of(r)["code"] == "account_disabled"
