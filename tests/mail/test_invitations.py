"""A course's invitations through a real SMTP server: new people get a one-use link to choose a
password, which works; people who have joined are left alone; an account that is not wholly the
course's gets a pointer to sign in, never a link; nobody is mailed twice within 10 minutes; the
roster shows invited / joined."""

from __future__ import annotations

import re

from sqlalchemy import func, select

from app.mail.models import MailOut
from tests.accounts.conftest import JSON
from tests.mail.conftest import Inbox

CSV = {"Content-Type": "text/csv"}
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


def _outbox(api) -> int:
    with api.app.state.sessions() as session:
        return int(session.scalar(select(func.count()).select_from(MailOut)) or 0)


def test_a_roster_import_invites_who_it_enrols(mail_app, inbox: Inbox) -> None:
    api, people = mail_app
    course = people.courses["course"]
    teacher = people.headers("instructor")
    csv = (
        "email,name\n"
        "r0@example.edu,Roster Zero\nr1@example.edu,Roster One\n"
        # Already enrolled here (has joined): left alone, not mailed.
        "student@example.edu,Student\n"
        # An account of this server, new to this course: a pointer to sign in, no link.
        "outsider@example.edu,Outsider\n"
    )
    r = api.post(f"/api/courses/{course}/roster", content=csv, headers={**teacher, **CSV})
    assert r.status_code == 200, r.text
    assert (r.json()["enrolled"], r.json()["unchanged"], r.json()["invited"]) == (3, 1, 3)
    wait_for(inbox, 3)
    assert sorted(to for _, [to], _ in inbox.mails) == [
        "outsider@example.edu",
        "r0@example.edu",
        "r1@example.edu",
    ]
    assert LINK.findall(body_of(inbox, "r0@example.edu"))
    outsider = body_of(inbox, "outsider@example.edu")
    assert "/reset/" not in outsider and "https://judge.example.edu/login" in outsider

    # The same file again: nobody new, nobody mailed.
    again = api.post(f"/api/courses/{course}/roster", content=csv, headers={**teacher, **CSV})
    assert again.status_code == 200 and again.json()["invited"] == 0
    assert _outbox(api) == 3


def test_a_roster_import_can_leave_invitations_out(mail_app, inbox: Inbox) -> None:
    api, people = mail_app
    course = people.courses["course"]
    csv = "email,name\nquiet@example.edu,Quiet\n"
    r = api.post(
        f"/api/courses/{course}/roster?invite=false",
        content=csv,
        headers={**people.headers("instructor"), **CSV},
    )
    assert r.status_code == 200 and (r.json()["enrolled"], r.json()["invited"]) == (1, 0)
    assert _outbox(api) == 0
    roster = api.get(
        f"/api/courses/{course}/members?q=quiet", headers=people.headers("instructor")
    ).json()
    assert roster["items"][0]["invitation"] == "none"
