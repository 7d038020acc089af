"""Joining by code without an account, and self sign-up, through a real SMTP server, on SQLite
and PostgreSQL: the account exists only once the mailed link is opened; an address that has an
account gets the same answer and a mail saying to sign in; bad input (a reused or expired link,
a second sign-up, a domain not allowed, a code no course takes, a rate limit) changes nothing
else."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from app.auth.models import User
from app.courses.models import Membership
from app.db.base import utcnow
from app.mail.models import MailOut
from app.main import create_app
from app.signup.models import Signup
from tests.accounts.conftest import JSON
from tests.mail.conftest import Inbox, mail_settings
from tests.mail.test_invitations import body_of, wait_for
from tests.support.people import People, seed_people

VERIFY = re.compile(r"https://judge\.example\.edu/verify/([A-Za-z0-9_-]+)")
PASSWORD = "a long enough password"

App = tuple[TestClient, People]
MakeApp = Callable[..., Any]


@pytest.fixture
def make_app(tmp_path: Path, inbox: Inbox, database_url: str | None) -> Iterator[MakeApp]:
    """The service mailing ``inbox``, with the given settings, and everyone of
    tests/support/people.py."""

    @contextmanager
    def start(**overrides: Any) -> Iterator[App]:
        settings = mail_settings(tmp_path / "data", inbox, database_url, **overrides)
        with TestClient(create_app(settings)) as api:
            yield api, seed_people(api.app.state.sessions)  # type: ignore[attr-defined]

    yield start


def _code(api: TestClient, people: People) -> str:
    course = people.courses["course"]
    teacher = people.headers("instructor")
    r = api.patch(f"/api/courses/{course}", json={"joining_open": True}, headers=teacher)
    assert r.status_code == 200, r.text
    code: str = r.json()["join_code"]
    return code


def _count(api: TestClient, what: Any, *where: Any) -> int:
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        return int(session.scalar(select(func.count()).select_from(what).where(*where)) or 0)


def _sign_up(api: TestClient, email: str, code: str | None = None, **more: Any) -> Any:
    body = {"email": email, "name": "New Person", "password": PASSWORD, **more}
    if code is not None:
        body["code"] = code
    return api.post("/api/signup", json=body, headers=JSON)


def _bodies(inbox: Inbox) -> list[tuple[str, str]]:
    out = []
    for _, [to], message in inbox.mails:
        part = message.get_body(("plain",))
        assert part is not None
        out.append((to, str(part.get_content())))
    return out


def _secret(inbox: Inbox, to: str) -> str:
    [secret] = VERIFY.findall(body_of(inbox, to))
    return str(secret)


def test_joining_by_link_without_an_account(make_app: MakeApp, inbox: Inbox) -> None:
    with make_app() as (api, people):
        code = _code(api, people)
        users = _count(api, User)
        r = _sign_up(api, "  Fresh@Example.edu ", code.lower())
        assert r.status_code == 202, r.text
        wait_for(inbox, 1)
        # Nothing exists for the address before its owner opens the link.
        assert _count(api, User) == users
        secret = _secret(inbox, "fresh@example.edu")

        done = api.post("/api/signup/verify", json={"secret": secret}, headers=JSON)
        assert done.status_code == 200, done.text
        assert done.json()["course_id"] == people.courses["course"]
        assert done.json()["missed"] is False
        # Signed in as the new account, a student of the course.
        mine = api.get("/api/courses").json()["items"]
        assert [(c["id"], c["role"]) for c in mine] == [(people.courses["course"], "student")]
        assert _count(api, User) == users + 1
        api.cookies.clear()
        login = api.post(
            "/api/auth/login", json={"email": "fresh@example.edu", "password": PASSWORD}
        )
        assert login.status_code == 200, login.text
        api.cookies.clear()

        # The link works once.
        again = api.post("/api/signup/verify", json={"secret": secret}, headers=JSON)
        assert again.status_code == 400 and again.json()["error"]["code"] == "invalid_signup_link"
        assert _count(api, User) == users + 1


def test_an_address_with_an_account_gets_the_same_answer(make_app: MakeApp, inbox: Inbox) -> None:
    with make_app() as (api, people):
        code = _code(api, people)
        with api.app.state.sessions() as session:  # type: ignore[attr-defined]
            before = session.get(User, people.users["student_b"]).password_hash  # type: ignore[union-attr]
        users = _count(api, User)
        members = _count(api, Membership)
        new = _sign_up(api, "nobody@example.edu", code)
        known = _sign_up(api, "student_b@example.edu", code, name="Attacker Chosen")
        assert (known.status_code, known.json()) == (new.status_code, new.json())
        assert known.status_code == 202
        wait_for(inbox, 2)
        text = body_of(inbox, "student_b@example.edu")
        assert VERIFY.findall(text) == [] and "/reset/" not in text
        assert f"https://judge.example.edu/join/{code}" in text
        assert "Attacker Chosen" not in text
        # No second account, no membership, the password untouched.
        assert (_count(api, User), _count(api, Membership)) == (users, members)
        with api.app.state.sessions() as session:  # type: ignore[attr-defined]
            after = session.get(User, people.users["student_b"]).password_hash  # type: ignore[union-attr]
        assert after == before


def test_a_second_sign_up_makes_no_second_account(make_app: MakeApp, inbox: Inbox) -> None:
    with make_app(signup_domains="example.edu") as (api, _):
        first = _sign_up(api, "twice@example.edu")
        second = _sign_up(api, "twice@example.edu")
        assert (first.status_code, first.json()) == (second.status_code, second.json())
        wait_for(inbox, 2)
        secrets = [s for _, text in _bodies(inbox) for s in VERIFY.findall(text)]
        assert len(set(secrets)) == 2
        ok = api.post("/api/signup/verify", json={"secret": secrets[0]}, headers=JSON)
        assert ok.status_code == 200 and ok.json()["course_id"] is None
        api.cookies.clear()
        users = _count(api, User)
        late = api.post("/api/signup/verify", json={"secret": secrets[1]}, headers=JSON)
        assert late.status_code == 409 and late.json()["error"]["code"] == "has_account"
        assert _count(api, User) == users
        assert _count(api, User, User.email == "twice@example.edu") == 1
        # And a third request, now that the address has an account, mails a pointer to sign in.
        assert _sign_up(api, "twice@example.edu").status_code == 202
        wait_for(inbox, 3)
        third = _bodies(inbox)[2][1]
        assert "https://judge.example.edu/login" in third and VERIFY.findall(third) == []


def test_an_expired_link_makes_nothing(make_app: MakeApp, inbox: Inbox) -> None:
    with make_app(signup_domains="example.edu") as (api, _):
        assert _sign_up(api, "slow@example.edu").status_code == 202
        wait_for(inbox, 1)
        with api.app.state.sessions() as session:  # type: ignore[attr-defined]
            session.execute(update(Signup).values(expires_at=utcnow() - timedelta(seconds=1)))
            session.commit()
        users = _count(api, User)
        r = api.post(
            "/api/signup/verify", json={"secret": _secret(inbox, "slow@example.edu")}, headers=JSON
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_signup_link"
        assert _count(api, User) == users and "tj_session" not in r.cookies


def test_self_sign_up_is_off_by_default(make_app: MakeApp) -> None:
    with make_app() as (api, _):
        closed = _sign_up(api, "someone@example.edu")
        assert closed.status_code == 403 and closed.json()["error"]["code"] == "signup_closed"
        assert _count(api, Signup) == 0 and _count(api, MailOut) == 0
        assert "data-signup" not in api.get("/login").text
        assert 'data-domains=""' in api.get("/signup").text


def test_self_sign_up_takes_only_the_configured_domains(make_app: MakeApp, inbox: Inbox) -> None:
    with make_app(signup_domains="Uni.Example.edu, @lab.example.org") as (api, _):
        wrong = _sign_up(api, "someone@gmail.example.com")
        assert wrong.status_code == 403
        error = wrong.json()["error"]
        assert error["code"] == "domain_not_allowed"
        assert "@uni.example.edu" in error["message"] and "@lab.example.org" in error["message"]
        assert _count(api, Signup) == 0 and _count(api, MailOut) == 0
        # A subdomain is another domain.
        assert _sign_up(api, "a@x.uni.example.edu").status_code == 403
        ok = _sign_up(api, "b@lab.example.org")
        assert ok.status_code == 202, ok.text
        wait_for(inbox, 1)
        done = api.post(
            "/api/signup/verify", json={"secret": _secret(inbox, "b@lab.example.org")}, headers=JSON
        )
        assert done.status_code == 200 and done.json()["user"]["email"] == "b@lab.example.org"
        assert api.get("/api/courses").json()["items"] == []
        assert "data-signup" in api.get("/login").text


def test_a_code_no_course_takes(make_app: MakeApp, inbox: Inbox) -> None:
    with make_app() as (api, people):
        code = _code(api, people)
        r = _sign_up(api, "x@example.edu", "NOSUCHCODE")
        assert r.status_code == 404 and r.json()["error"]["code"] == "join_code_not_found"
        # Rotated between the request and the link: the account is made, it joins nothing.
        assert _sign_up(api, "late@example.edu", code).status_code == 202
        course = people.courses["course"]
        teacher = people.headers("instructor")
        api.patch(f"/api/courses/{course}", json={"rotate_code": True}, headers=teacher)
        wait_for(inbox, 1)
        done = api.post(
            "/api/signup/verify", json={"secret": _secret(inbox, "late@example.edu")}, headers=JSON
        )
        assert done.status_code == 200, done.text
        assert (done.json()["course_id"], done.json()["missed"]) == (None, True)
        assert _count(api, Membership, Membership.user_id == done.json()["user"]["id"]) == 0


def test_sign_up_is_rate_limited(make_app: MakeApp, inbox: Inbox) -> None:
    with make_app(
        signup_domains="example.edu", signup_max_per_email=2, signup_max_per_address=4
    ) as (api, people):
        code = _code(api, people)
        # Per email, whether or not the address has an account: the same answers.
        for email in ("limit@example.edu", "student_b@example.edu"):
            assert _sign_up(api, email).status_code == 202
            assert _sign_up(api, email, code).status_code == 202
            r = _sign_up(api, email)
            assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_signups"
            assert int(r.headers["Retry-After"]) > 0
        wait_for(inbox, 4)
        assert _count(api, Signup) == 4
        # Per address: another email from the same client is refused too (4 allowed, all 4
        # taken by the requests above).
        r = _sign_up(api, "other@example.edu")
        assert r.status_code == 429
        assert _count(api, Signup) == 4 and _count(api, MailOut) == 4
        assert len(inbox.mails) == 4
