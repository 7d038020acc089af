"""Administrators manage accounts: create, list by pages, change role, disable, reset links
(single use, expiring), and the mailer behind a setting."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from app.auth.models import PasswordReset
from app.core.config import Settings
from app.db.base import utcnow
from app.mail.outbox import send_due
from app.mail.sender import policy_of
from app.mail.transport import LogTransport
from tests.accounts.conftest import JSON, PASSWORD, error_of, login
from tests.support.people import People


@pytest.mark.parametrize("who", ["anonymous", "student", "ta", "instructor"])
def test_admin_routes_refuse_everyone_else(api: TestClient, people: People, who: str):
    uid = people.users["student"]
    expected = 401 if who == "anonymous" else 403
    headers = people.headers(who)
    for method, path, body in (
        ("GET", "/api/admin/users", None),
        ("POST", "/api/admin/users", {"email": "x@example.edu", "name": "X"}),
        ("PATCH", f"/api/admin/users/{uid}", {"role": "admin"}),
        ("POST", f"/api/admin/users/{uid}/reset-link", None),
    ):
        r = api.request(method, path, json=body, headers=headers)
        assert r.status_code == expected, (who, method, path, r.text)


def test_admin_creates_lists_and_changes_accounts(api: TestClient, people: People):
    admin = people.headers("admin")
    r = api.post(
        "/api/admin/users",
        json={
            "email": " New.Person@Example.edu ",
            "name": "New Person",
            "role": "instructor",
            "password": "a long enough password",
        },
        headers=admin,
    )
    assert r.status_code == 201, r.text
    new = r.json()
    assert new["email"] == "new.person@example.edu" and new["has_password"] is True
    assert login(api, "new.person@example.edu", "a long enough password").status_code == 200
    dup = api.post(
        "/api/admin/users", json={"email": "new.person@example.edu", "name": "X"}, headers=admin
    )
    assert dup.status_code == 409
    short = api.post(
        "/api/admin/users",
        json={"email": "y@example.edu", "name": "Y", "password": "short"},
        headers=admin,
    )
    assert short.status_code == 422 and error_of(short)["field"] == "password"
    bad_role = api.post(
        "/api/admin/users",
        json={"email": "z@example.edu", "name": "Z", "role": "god"},
        headers=admin,
    )
    assert bad_role.status_code == 422

    first = api.get("/api/admin/users?limit=3", headers=admin).json()
    second = api.get("/api/admin/users?limit=3&offset=3", headers=admin).json()
    assert first["total"] == second["total"] == 9
    assert len(first["items"]) == 3 and first["items"][0]["email"] == "admin@example.edu"
    assert {u["id"] for u in first["items"]}.isdisjoint({u["id"] for u in second["items"]})
    assert api.get("/api/admin/users?limit=1000", headers=admin).status_code == 422

    r = api.patch(f"/api/admin/users/{new['id']}", json={"role": "member"}, headers=admin)
    assert r.status_code == 200 and r.json()["role"] == "member"
    own = api.patch(
        f"/api/admin/users/{people.users['admin']}", json={"disabled": True}, headers=admin
    )
    assert own.status_code == 409
    assert api.patch("/api/admin/users/99999", json={}, headers=admin).status_code == 404
    r = api.patch(f"/api/admin/users/{new['id']}", json={"role": "root"}, headers=admin)
    assert r.status_code == 422


def test_reset_link_is_single_use_and_signs_in(api: TestClient, people: People):
    uid = people.users["ta"]  # no password yet
    r = api.post(f"/api/admin/users/{uid}/reset-link", headers=people.headers("admin"))
    assert r.status_code == 201
    url = r.json()["url"]
    assert url.startswith("/reset/") and r.json()["mailed"] is False
    secret = url.removeprefix("/reset/")
    page = api.get(url)
    assert page.status_code in (200, 503)  # the page shell (503 only if assets are unbuilt)
    short = api.post("/api/auth/reset", json={"secret": secret, "password": "short"})
    assert short.status_code == 422 and error_of(short)["code"] == "invalid_password"
    # A signed-in browser of the same person elsewhere is signed out by the reset.
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        from app.auth.sessions import start_session

        other_secret, _ = start_session(session, uid, timedelta(hours=1))
        session.commit()
    other = TestClient(api.app, cookies={"tj_session": other_secret})
    assert other.get("/api/auth/me").json()["user"]["id"] == uid
    ok = api.post("/api/auth/reset", json={"secret": secret, "password": "my new password"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["user"]["id"] == uid and "tj_session=" in ok.headers["set-cookie"]
    assert api.get("/api/auth/me").json()["user"]["id"] == uid
    assert other.get("/api/auth/me").json()["user"] is None
    again = api.post("/api/auth/reset", json={"secret": secret, "password": "another password"})
    assert again.status_code == 400 and error_of(again)["code"] == "invalid_reset_link"
    api.cookies.clear()
    assert login(api, "ta@example.edu", "my new password").status_code == 200


def test_reset_link_expires(api: TestClient, people: People):
    uid = people.users["student"]
    url = api.post(f"/api/admin/users/{uid}/reset-link", headers=people.headers("admin")).json()[
        "url"
    ]
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        for row in session.query(PasswordReset).all():
            row.expires_at = utcnow() - timedelta(seconds=1)
        session.commit()
    r = api.post(
        "/api/auth/reset", json={"secret": url.removeprefix("/reset/"), "password": "x" * 12}
    )
    assert r.status_code == 400
    assert login(api).status_code == 200  # the old password still works


def test_reset_refuses_cross_site_forms(api: TestClient, people: People):
    r = api.post("/api/auth/reset", data={"secret": "x", "password": "y" * 12})
    assert r.status_code == 415
    r = api.post(
        "/api/auth/reset",
        json={"secret": "x", "password": "y" * 12},
        headers={**JSON, "Origin": "https://evil.test"},
    )
    assert r.status_code == 403


def test_reset_link_mailed_through_the_log_mailer(
    api: TestClient, people: People, caplog: pytest.LogCaptureFixture
):
    uid = people.users["student"]
    r = api.post(f"/api/admin/users/{uid}/reset-link?mail=true", headers=people.headers("admin"))
    assert r.status_code == 201 and r.json()["mailed"] is True
    # Queued in the link's transaction; the default transport writes it to the log (here or
    # in the app's own sender thread, whichever comes first).
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    with caplog.at_level(logging.WARNING, logger="app.mail.transport"):
        send_due(sessions, LogTransport(), "judge@localhost", policy_of(Settings()))
    view = api.get("/api/admin/mail", headers=people.headers("admin")).json()
    assert [(i["kind"], i["to"], i["status"]) for i in view["items"]] == [
        ("reset", "student@example.edu", "sent")
    ]
    assert r.json()["url"] in caplog.text and "student@example.edu" in caplog.text
    assert PASSWORD not in caplog.text
