"""A course's invitations through a real SMTP server: new people get a one-use link to choose a
password, which works; people who have joined are left alone; an account that is not wholly the
course's gets a pointer to sign in, never a link; nobody is mailed twice within 10 minutes; the
roster shows invited / joined."""

from __future__ import annotations

import re

from tests.accounts.conftest import JSON
from tests.mail.conftest import Inbox

LINK = re.compile(r"https://judge\.example\.edu(/reset/[A-Za-z0-9_-]+)")


def wait_for(inbox: Inbox, count: int) -> None:
    while len(inbox.mails) < count:
        inbox.arrived.clear()
        if len(inbox.mails) >= count:
            break
        assert inbox.arrived.wait(60), f"{len(inbox.mails)} of {count} mails arrived"


def body_of(inbox: Inbox, to: str) -> str:
    [message] = [m for _, rcpts, m in inbox.mails if rcpts == [to]]
    part = message.get_body(("plain",))
    assert part is not None
    return str(part.get_content())


def test_inviting_a_roster(mail_app, inbox: Inbox) -> None:
    api, people = mail_app
    course = people.courses["course"]
    teacher = people.headers("instructor")
    new = [f"new{i}@example.edu" for i in range(3)]
    ids = []
    for email in new:
        r = api.post(f"/api/courses/{course}/members", json={"email": email}, headers=teacher)
        assert r.status_code == 201, r.text
        ids.append(r.json()["user_id"])

    r = api.post(f"/api/courses/{course}/invitations", headers=teacher)
    assert r.status_code == 200, r.text
    assert sorted(r.json()["invited"]) == sorted(ids)
    # The seeded student has a token: joined, not mailed.
    skipped = {s["user_id"]: s["reason"] for s in r.json()["skipped"]}
    assert skipped[people.users["student"]] == "joined already"
    wait_for(inbox, 3)
    assert sorted(to for _, [to], _ in inbox.mails) == new

    # One of them chooses a password from the mailed link and is signed in.
    [path] = LINK.findall(body_of(inbox, "new0@example.edu"))
    done = api.post(
        "/api/auth/reset",
        json={"secret": path.removeprefix("/reset/"), "password": "chosen from the mail"},
        headers=JSON,
    )
    assert done.status_code == 200 and done.json()["user"]["email"] == "new0@example.edu"
    api.cookies.clear()

    roster = api.get(f"/api/courses/{course}/members", headers=teacher).json()["items"]
    by_email = {m["email"]: m for m in roster}
    assert by_email["new0@example.edu"]["has_password"] is True
    assert by_email["new1@example.edu"]["has_password"] is False
    assert {by_email[e]["invitation"] for e in new} == {"sent"}
    assert by_email["student@example.edu"]["invitation"] == "none"

    # Again at once: nobody is mailed twice within 10 minutes, joined people never.
    again = api.post(f"/api/courses/{course}/invitations", headers=teacher).json()
    assert again["invited"] == []
    reasons = {s["user_id"]: s["reason"] for s in again["skipped"]}
    assert reasons[ids[0]] == "joined already"
    assert reasons[ids[1]].startswith("invited less than 10 minutes ago")


def test_an_account_not_the_courses_gets_no_link(mail_app, inbox: Inbox) -> None:
    api, people = mail_app
    course = people.courses["course"]
    teacher = people.headers("instructor")
    # An account another course made, never used: its password is not this course's to set.
    other = people.courses["other_course"]
    r = api.post(
        f"/api/courses/{other}/members",
        json={"email": "shared@example.edu"},
        headers=people.headers("admin"),
    )
    uid = r.json()["user_id"]
    r = api.post(
        f"/api/courses/{course}/members", json={"email": "shared@example.edu"}, headers=teacher
    )
    assert r.status_code == 201 and r.json()["user_id"] == uid
    r = api.post(f"/api/courses/{course}/members/{uid}/invitation", headers=teacher)
    assert r.status_code == 200 and r.json()["invited"] == [uid]
    wait_for(inbox, 1)
    text = body_of(inbox, "shared@example.edu")
    assert "/reset/" not in text and "https://judge.example.edu/login" in text
    # Not a member here: unknown, whichever course they are in.
    outsider = people.users["outsider"]
    r = api.post(f"/api/courses/{course}/members/{outsider}/invitation", headers=teacher)
    assert r.status_code == 404
