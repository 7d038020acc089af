"""Notifications through the outbox and a real SMTP server: an extension granted reaches the
student it names (always); "scores published" reaches each active student who keeps the
optional mails on, and not one who turned them off; publishing again mails nobody."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.assignments.conftest import assignment_body
from tests.mail.conftest import Inbox
from tests.mail.test_invitations import body_of, wait_for
from tests.support.people import People


@pytest.fixture
def world(mail_app: tuple[TestClient, People]) -> tuple[TestClient, People, str]:
    """The mailing service and an assignment of the course (its API path)."""
    api, people = mail_app
    base = f"/api/courses/{people.courses['course']}/assignments"
    r = api.post(base, json=assignment_body(), headers=people.headers("instructor"))
    assert r.status_code == 201, r.text
    return api, people, f"{base}/{r.json()['id']}"


def test_an_extension_is_mailed_to_its_student(world, inbox: Inbox) -> None:
    api, people, path = world
    r = api.post(
        f"{path}/overrides",
        json={"user_id": people.users["student"], "extra_attempts": 2},
        headers=people.headers("ta"),
    )
    assert r.status_code == 201, r.text
    wait_for(inbox, 1)
    assert [to for _, to, _ in inbox.mails] == [["student@example.edu"]]
    text = body_of(inbox, "student@example.edu")
    assert "2 more attempt(s)" in text and path.removeprefix("/api") in text


def test_scores_published_respects_the_opt_out(world, inbox: Inbox) -> None:
    api, people, path = world
    assert api.get("/api/account/mail", headers=people.headers("student_b")).json() == {
        "optional": True
    }
    r = api.put("/api/account/mail", json={"optional": False}, headers=people.headers("student_b"))
    assert r.status_code == 200 and r.json() == {"optional": False}
    teacher = people.headers("instructor")
    r = api.post(f"{path}/publish", json={"scores": True}, headers=teacher)
    assert r.status_code == 200, r.text
    wait_for(inbox, 1)
    r = api.post(f"{path}/publish", json={"scores": True}, headers=teacher)  # already out
    assert r.status_code == 200
    view = api.get("/api/admin/mail", headers=people.headers("admin")).json()
    # Written in the publishing transaction: every mail there is to be, is in the outbox now.
    assert [(i["kind"], i["to"]) for i in view["items"]] == [
        ("scores_published", "student@example.edu")
    ]
    assert [to for _, to, _ in inbox.mails] == [["student@example.edu"]]
