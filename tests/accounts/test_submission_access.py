"""Submissions and accounts: anonymous practice behind a setting, the account stored on a
signed-in submission, and who may read it (the owner and administrators; anonymous practice
rows by their id, as before)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.auth.tokens import Principal
from app.submissions.access import may_read
from app.submissions.models import Submission
from tests.accounts.conftest import MakeClient, error_of, login, set_password
from tests.support.people import People, seed_people

PROBLEM = "softmax-backward"
CODE = {"code": "def f():\n    return 1\n", "mode": "examples"}


def _submit(client: TestClient, headers: dict[str, str] | None = None) -> object:
    return client.post(f"/api/problems/{PROBLEM}/submissions", json=CODE, headers=headers or {})


def test_no_anonymous_practice_needs_an_account(make_client: MakeClient):
    client = make_client(anonymous_practice=False)
    people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
    r = _submit(client)
    assert r.status_code == 401  # type: ignore[attr-defined]
    assert error_of(r)["code"] == "unauthenticated"
    assert r.headers["WWW-Authenticate"] == "Bearer"  # type: ignore[attr-defined]
    r = _submit(client, people.headers("student"))
    assert r.status_code == 202, r.text  # type: ignore[attr-defined]
    # A signed-in page submits with its session (and CSRF token) too.
    set_password(client, people.users["student_b"])
    csrf = login(client, "student_b@example.edu").json()["csrf_token"]
    assert _submit(client).status_code == 403  # type: ignore[attr-defined]
    r = _submit(client, {"X-CSRF-Token": csrf})
    assert r.status_code == 202  # type: ignore[attr-defined]
    with client.app.state.sessions() as session:  # type: ignore[attr-defined]
        owners = sorted(u for (u,) in session.query(Submission.user_id).all())
    assert owners == sorted([people.users["student"], people.users["student_b"]])


def test_signed_in_submissions_are_read_by_their_owner_and_admins(api: TestClient, people: People):
    r = _submit(api, people.headers("student"))
    assert r.status_code == 202
    sid = r.json()["id"]
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        assert session.get(Submission, sid).user_id == people.users["student"]  # type: ignore[union-attr]
    for who, status in (
        ("student", 200),
        ("admin", 200),
        ("anonymous", 404),
        ("student_b", 404),
        ("other_student", 404),
        ("outsider", 404),
    ):
        got = api.get(f"/api/submissions/{sid}", headers=people.headers(who))
        assert got.status_code == status, who
        events = api.get(f"/api/submissions/{sid}/events", headers=people.headers(who))
        if status == 404:
            assert events.status_code == 404, who
    # Anonymous practice rows stay readable by anyone with the id.
    anonymous = _submit(api).json()["id"]
    for who in ("anonymous", "student_b"):
        assert (
            api.get(f"/api/submissions/{anonymous}", headers=people.headers(who)).status_code == 200
        )


def test_may_read_rule():
    owner = Principal(user_id=1, name="a", role="member")
    other = Principal(user_id=2, name="b", role="instructor")
    admin = Principal(user_id=3, name="c", role="admin")
    mine = Submission(user_id=1)
    anonymous = Submission(user_id=None)
    assert may_read(owner, mine) and may_read(admin, mine)
    assert not may_read(other, mine) and not may_read(None, mine)
    assert all(may_read(p, anonymous) for p in (None, owner, other))
