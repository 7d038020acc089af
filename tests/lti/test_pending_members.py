"""An LMS course linked to an existing web course, on a platform NOT trusted for email, against
the mock platform on SQLite and PostgreSQL: its roster sync makes no second account for a
member whose email is an existing member's of the course (the gradebook lists them once); that
person's launch makes no membership and links their LMS identity to their account once they
confirm, signed in; an LMS asserting an email gets no access to that account or course."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.auth.accounts import create_user
from app.courses.models import Membership
from app.db.base import utcnow
from app.lti.linking import IDENTITY_COOKIE
from app.lti.models import LtiPendingMember, LtiUser
from tests.gradebook.factories import MHA, make_assignment
from tests.lti.conftest import Tool
from tests.lti.test_lms_link import add_link, me, sign_in, web_course
from tests.support.lti_platform import LEARNER


def csrf(browser: TestClient) -> dict[str, str]:
    return {"X-CSRF-Token": browser.get("/api/auth/me").json()["csrf_token"]}


def link_web_course(tool: Tool, course_id: int, ines: int) -> TestClient:
    """Ines, on the untrusted platform, links her LMS identity to her web account, then the LMS
    course to her web course (the roster sync runs after that launch). Her browser."""
    browser = tool.browser()
    first = tool.launch(browser, "ines", "deep-link")
    assert 'id="link-account"' in first.text, first.text
    sign_in(tool, browser, ines)
    assert browser.post("/lti/link-account", follow_redirects=False).status_code in (200, 303)
    browser = tool.browser()  # her next launch, in a browser with no cookie of the first
    page = tool.launch(browser, "ines", "deep-link")
    assert me(browser) == ines
    picked = tool.link(browser, page, f"course:{course_id}")
    assert picked.status_code == 200 and "Add TensorJudge to ML on the web" in picked.text
    return browser


def held_apart(tool: Tool, subject: str, member: int) -> None:
    """The launch made the person an LMS account of its own, unlinked and in no course."""
    with tool.sessions() as session:
        made = session.scalars(select(LtiUser).where(LtiUser.subject == subject)).one()
        assert made.user_id != member and made.linked_at is None
        held = session.scalars(select(Membership).where(Membership.user_id == made.user_id))
        assert held.all() == []


def gradebook_students(tool: Tool, browser: TestClient, course_id: int, assignment: int) -> list:
    got = browser.get(f"/api/courses/{course_id}/assignments/{assignment}/gradebook")
    assert got.status_code == 200, got.text
    return sorted(row["user_id"] for row in got.json()["students"])


def test_an_untrusted_sync_makes_no_second_account_for_a_course_member(tool: Tool) -> None:
    course_id, ines, sam = web_course(tool)
    assignment = make_assignment(
        tool.sessions, course_id, ((MHA, 1.0),), due_at=utcnow() + timedelta(days=7)
    )
    users_before = tool.counts()["User"]
    browser = link_web_course(tool, course_id, ines)
    # Ines's first launch made one account (since linked to hers); the sync made Carol's only.
    assert tool.counts()["User"] == users_before + 2
    with tool.sessions() as session:
        carol = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-carol")).one()
        assert session.scalars(select(LtiUser).where(LtiUser.subject == "sub-sam")).all() == []
        held = session.scalars(select(LtiPendingMember)).one()
    assert held.subject == "sub-sam" and held.user_id == sam
    assert gradebook_students(tool, browser, course_id, assignment) == sorted([sam, carol.user_id])
    # Syncing again changes nothing, and says who waits.
    synced = browser.post(f"/api/courses/{course_id}/lti/roster-sync", headers=csrf(browser))
    assert synced.status_code == 200, synced.text
    assert synced.json() == {"members": 3, "added": 0, "pending": 1}
    pending = browser.get(f"/api/courses/{course_id}/lti/pending-members")
    assert pending.status_code == 200, pending.text
    assert [(p["user_id"], p["platform"]) for p in pending.json()] == [(sam, "Mock LMS")]
    assert tool.counts()["User"] == users_before + 2
    assert gradebook_students(tool, browser, course_id, assignment) == sorted([sam, carol.user_id])


def test_a_pending_member_launching_signed_in_links_their_account(tool: Tool) -> None:
    course_id, ines, sam = web_course(tool)
    assignment = make_assignment(
        tool.sessions, course_id, ((MHA, 1.0),), due_at=utcnow() + timedelta(days=7)
    )
    instructor = link_web_course(tool, course_id, ines)
    link_id = add_link(tool, f"assignment:{assignment}")
    student = tool.browser()
    sign_in(tool, student, sam)
    landed = tool.launch(student, "sam", link_id)
    assert landed.status_code == 303 and landed.headers["location"] == "/lti/link-account"
    assert me(student) == sam  # the session stays Sam's own
    held_apart(tool, "sub-sam", sam)
    confirm = student.get("/lti/link-account")
    assert confirm.status_code == 200 and "sam@lms.example.edu" in confirm.text
    linked = student.post("/lti/link-account", follow_redirects=False)
    assert linked.status_code == 303, linked.text
    assert linked.headers["location"] == (
        f"/courses/{course_id}/assignments/{assignment}/problems/{MHA}"
    )
    with tool.sessions() as session:
        identity = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-sam")).one()
        assert identity.user_id == sam and identity.linked_at is not None
        assert session.scalars(select(LtiPendingMember)).all() == []
    assert instructor.get(f"/api/courses/{course_id}/lti/pending-members").json() == []
    synced = instructor.post(f"/api/courses/{course_id}/lti/roster-sync", headers=csrf(instructor))
    assert synced.json() == {"members": 3, "added": 0, "pending": 0}
    students = gradebook_students(tool, instructor, course_id, assignment)
    assert sam in students and len(students) == 2  # Sam once, and Carol
    # Later launches sign in as Sam's own account, with nothing left to link.
    again = tool.browser()
    assert tool.launch(again, "sam", link_id).status_code == 303
    assert me(again) == sam and not again.cookies.get(IDENTITY_COOKIE)


def test_an_lms_asserting_an_email_gets_no_access_to_that_account(tool: Tool) -> None:
    """The attack: an untrusted LMS gives its people the emails of accounts here, one of a
    member of the linked course (Sam), one of an account in no course (Olga)."""
    course_id, ines, sam = web_course(tool)
    with tool.sessions() as session:
        olga = create_user(session, "olga@example.edu", "Olga, in no course").id
        session.commit()
    tool.platform.add_person("mallory", "Mallory", [LEARNER]).email = "olga@example.edu"
    link_web_course(tool, course_id, ines)
    link_id = add_link(tool, f"problem:{MHA}")

    # As Sam, not signed in: no session, no membership, and no way to link without Sam's login.
    attacker = tool.browser()
    landed = tool.launch(attacker, "sam", link_id)
    assert landed.status_code == 303 and landed.headers["location"] == "/lti/link-account"
    assert "tj_session" not in landed.cookies
    assert attacker.get(f"/api/courses/{course_id}").status_code == 401
    refused = attacker.post("/lti/link-account", follow_redirects=False)
    assert refused.status_code == 403 and 'data-code="sign_in_first"' in refused.text
    held_apart(tool, "sub-sam", sam)

    # As Mallory with Olga's email (no member of the course): an account of her own, not Olga's.
    mallory = tool.browser()
    assert tool.launch(mallory, "mallory", link_id).status_code == 303
    assert me(mallory) != olga
    with tool.sessions() as session:
        assert session.scalars(select(LtiUser).where(LtiUser.user_id == olga)).all() == []
        assert session.scalars(select(Membership).where(Membership.user_id == olga)).all() == []
        assert (
            session.scalars(select(LtiPendingMember).where(LtiPendingMember.user_id == olga)).all()
            == []
        )
