"""The outbox through the service: a reset link mailed by an administrator reaches a real SMTP
server through the app's own sender thread; a refused one shows as failed in the staff view
(never its body); a course's staff see their course's mails only."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.mail.messages import reset_message
from app.mail.outbox import enqueue
from app.main import create_app
from tests.mail.conftest import Inbox, mail_settings
from tests.support.people import seed_people


def test_a_mailed_reset_link_arrives_and_shows_as_sent(mail_app, inbox: Inbox) -> None:
    api, people = mail_app
    uid = people.users["student"]
    r = api.post(f"/api/admin/users/{uid}/reset-link?mail=true", headers=people.headers("admin"))
    assert r.status_code == 201 and r.json()["mailed"] is True
    url = r.json()["url"]
    assert inbox.arrived.wait(60), "the app's mail sender never sent the link"
    [(_, rcpts, message)] = inbox.mails
    assert rcpts == ["student@example.edu"]
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and url in text.get_content()
    assert html is not None and f'href="{url}"' in html.get_content()
    view = api.get("/api/admin/mail", headers=people.headers("admin")).json()
    [item] = view["items"]
    assert item["kind"] == "reset" and item["to"] == "student@example.edu"
    assert item["status"] == "sent" and view["counts"] == {"sent": 1}
    assert url not in str(view)  # the link is the student's, not the staff's


def test_a_refused_mail_shows_failed_to_the_admin(mail_app, inbox: Inbox) -> None:
    api, people = mail_app
    inbox.refuse_rcpt = "550 5.1.1 mailbox unavailable"
    uid = people.users["student"]
    api.post(f"/api/admin/users/{uid}/reset-link?mail=true", headers=people.headers("admin"))
    admin = people.headers("admin")
    for _ in range(600):  # the sender's passes, 0.05 s apart; bounded, not timed
        view = api.get("/api/admin/mail?status=failed", headers=admin).json()
        if view["items"]:
            break
        inbox.arrived.wait(0.05)
    [item] = view["items"]
    assert item["status"] == "failed" and "550" in item["last_error"]
    assert inbox.mails == []


def test_course_staff_see_their_courses_mail_only(mail_app) -> None:
    api, people = mail_app
    with api.app.state.sessions() as session:  # type: ignore[attr-defined]
        for key in ("course", "other_course"):
            message = reset_message(key, f"https://judge.example.edu/reset/{key}")
            enqueue(
                session, "invitation", f"{key}@example.edu", message, course_id=people.courses[key]
            )
        session.commit()
    course = people.courses["course"]
    r = api.get(f"/api/courses/{course}/mail", headers=people.headers("instructor"))
    assert r.status_code == 200
    assert [item["to"] for item in r.json()["items"]] == ["course@example.edu"]
    other = people.courses["other_course"]
    r = api.get(f"/api/courses/{other}/mail", headers=people.headers("instructor"))
    assert r.status_code == 404


def test_a_mailed_reset_link_is_a_whole_address_without_a_public_url(
    tmp_path, inbox: Inbox
) -> None:
    """Without GRADER_PUBLIC_URL the answer keeps the path, and the mail holds the request's
    address before it: a path alone in a mail is no link (it was, before)."""
    settings = mail_settings(tmp_path / "data", inbox, public_url=None)
    with TestClient(create_app(settings)) as api:
        people = seed_people(api.app.state.sessions)  # type: ignore[attr-defined]
        uid = people.users["student"]
        r = api.post(
            f"/api/admin/users/{uid}/reset-link?mail=true", headers=people.headers("admin")
        )
        assert r.status_code == 201 and r.json()["url"].startswith("/reset/")
        assert inbox.arrived.wait(60)
        [(_, _, message)] = inbox.mails
        text = message.get_body(("plain",))
        assert text is not None and f"http://testserver{r.json()['url']}" in text.get_content()
