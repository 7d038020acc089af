"""One course whether it starts on the web or in the LMS (issue 38), against the mock platform on
SQLite and PostgreSQL: the LMS course's first launch lets its instructor link it to a course
they teach here (only them, one course per LMS course); a person links their LMS account to
their existing one once, signed in in the launching browser; a platform's email matches an
existing account only when an administrator trusts it, and never an account of another role;
a web-made assignment's scores reach the LMS once it is linked to a line item."""

from __future__ import annotations

from datetime import timedelta

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.auth.accounts import create_user
from app.auth.models import User
from app.courses.models import Course, Membership
from app.db.base import utcnow
from app.lti.linking import IDENTITY_COOKIE
from app.lti.models import LtiContext, LtiPlatform, LtiScoreSend, LtiUser
from app.lti.outbox import send_due
from app.lti.sender import policy_of
from tests.gradebook.factories import MHA, make_assignment
from tests.lti.conftest import Tool
from tests.lti.test_journey import submit
from tests.support.browser_session import session_cookie
from tests.support.codes import CORRECT
from tests.support.lti_platform import form_fields

LMS_EMAIL = {"ines": "ines@lms.example.edu", "sam": "sam@lms.example.edu"}


def web_course(tool: Tool, title: str = "ML on the web") -> tuple[int, int, int]:
    """A course made on the web: (course, its instructor's account, a student's account), the
    accounts with the emails the LMS gives Ines and Sam."""
    with tool.sessions() as session:
        course = Course(title=title)
        session.add(course)
        session.flush()
        ines = create_user(session, LMS_EMAIL["ines"], "Ines on the web", "instructor")
        sam = create_user(session, LMS_EMAIL["sam"], "Sam on the web")
        session.add(Membership(course_id=course.id, user_id=ines.id, role="instructor"))
        session.add(Membership(course_id=course.id, user_id=sam.id, role="student"))
        session.commit()
        return course.id, ines.id, sam.id


def trust(tool: Tool, value: bool) -> None:
    with tool.sessions() as session:
        platform_id = session.scalars(select(LtiPlatform.id)).one()
    patched = tool.api.patch(
        f"/api/lti/platforms/{platform_id}", json={"trust_email": value}, headers=tool.admin
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["trust_email"] is value


def sign_in(tool: Tool, browser: TestClient, user_id: int) -> None:
    name, value, _ = session_cookie(tool.sessions, user_id)
    browser.cookies.set(name, value)


def me(browser: TestClient) -> int:
    found: int = browser.get("/api/auth/me").json()["user"]["id"]
    return found


def linked_course(tool: Tool) -> int | None:
    with tool.sessions() as session:
        return session.scalars(select(LtiContext.course_id)).one_or_none()


def add_link(tool: Tool, choice: str) -> str:
    """Ines (already in the linked course) deep-links ``choice``: the platform's link id."""
    browser = tool.browser()
    pick = tool.launch(browser, "ines", "deep-link")
    assert pick.status_code == 200 and "/lti/deep-link" in pick.text, pick.text
    _, fields = form_fields(pick.text)
    answer = browser.post("/lti/deep-link", data={"secret": fields["secret"], "choice": choice})
    action, posted = form_fields(answer.text)
    assert httpx.post(action, data=posted).status_code == 200
    return list(tool.platform.links)[-1]


def test_a_trusted_instructor_links_the_lms_course_to_their_web_course(tool: Tool) -> None:
    course_id, ines, sam = web_course(tool)
    trust(tool, True)
    browser = tool.browser()
    page = tool.launch(browser, "ines", "deep-link")
    assert page.status_code == 200 and "Set up Machine Learning 101" in page.text
    assert f'value="course:{course_id}"' in page.text and "ML on the web" in page.text
    assert 'id="link-account"' not in page.text  # matched by email: nothing to link
    assert me(browser) == ines
    before = tool.counts()
    pick = tool.link(browser, page, f"course:{course_id}")
    assert pick.status_code == 200 and "Add TensorJudge to ML on the web" in pick.text
    assert linked_course(tool) == course_id
    after = tool.counts()
    assert after["Course"] == before["Course"]  # no second course
    # The roster sync after linking: Sam matched by email, only Carol (new here) is made.
    assert after["User"] == before["User"] + 1
    with tool.sessions() as session:
        mapped = {s: u for s, u in session.execute(select(LtiUser.subject, LtiUser.user_id))}
    assert mapped["sub-ines"] == ines and mapped["sub-sam"] == sam


def test_only_an_instructor_of_the_course_links_it_and_only_once(tool: Tool) -> None:
    course_id, _, _ = web_course(tool)
    with tool.sessions() as session:  # a course Ines does not teach
        other = Course(title="Someone else's course")
        session.add(other)
        session.commit()
        other_id = other.id
    trust(tool, True)
    browser = tool.browser()
    page = tool.launch(browser, "ines", "deep-link")
    assert f'value="course:{other_id}"' not in page.text
    secret = form_fields(page.text)[1]["secret"]
    before = tool.counts()
    for choice in (f"course:{other_id}", "course:999999", "nonsense"):
        refused = browser.post("/lti/link-course", data={"secret": secret, "choice": choice})
        assert refused.status_code in (400, 403), refused.text
        assert "This launch did not work" in refused.text
    # Another browser (an administrator's, signed in) with the secret: not theirs.
    admin = tool.browser()
    with tool.sessions() as session:
        admin_id = session.scalars(select(User.id).where(User.role == "admin")).one()
    sign_in(tool, admin, admin_id)
    stolen = admin.post("/lti/link-course", data={"secret": secret, "choice": "new"})
    assert stolen.status_code == 403 and 'data-code="invalid_link"' in stolen.text
    assert tool.counts() == before and linked_course(tool) is None
    # The refusals did not use the secret up; once used, it is refused.
    assert tool.link(browser, page, f"course:{course_id}").status_code == 200
    replay = browser.post("/lti/link-course", data={"secret": secret, "choice": "new"})
    assert replay.status_code == 400 and 'data-code="already_used"' in replay.text
    assert linked_course(tool) == course_id


def test_a_context_links_to_one_course(tool: Tool) -> None:
    course_id, _, _ = web_course(tool)
    trust(tool, True)
    browser = tool.browser()
    first = tool.launch(browser, "ines", "deep-link")
    second = tool.launch(browser, "ines", "deep-link")  # a second tab, the same LMS course
    assert tool.link(browser, first, "new").status_code == 200
    made = linked_course(tool)
    before = tool.counts()
    refused = tool.link(browser, second, f"course:{course_id}")
    assert refused.status_code == 409 and 'data-code="already_linked"' in refused.text
    assert linked_course(tool) == made != course_id
    assert tool.counts() == before


def test_a_student_launch_waits_for_the_lms_course_to_be_linked(tool: Tool) -> None:
    from tests.support.lti_platform import Link

    tool.platform.links["early"] = Link(id="early", title="Early")
    before = tool.counts()
    refused = tool.launch(tool.browser(), "sam", "early")
    assert refused.status_code == 409 and 'data-code="not_linked"' in refused.text
    assert "tj_session" not in refused.cookies
    assert tool.counts() == before


def test_an_untrusted_platform_s_email_never_signs_in_as_that_account(tool: Tool) -> None:
    """The attack: an LMS (untrusted by default) asserts an existing account's email."""
    course_id, ines, sam = web_course(tool)
    browser = tool.browser()
    page = tool.launch(browser, "ines", "deep-link")
    assert me(browser) != ines  # a new, unlinked identity
    assert f'value="course:{course_id}"' not in page.text  # it teaches nothing here
    assert 'id="link-account"' in page.text  # but may sign in to link
    tool.link(browser, page, "new")
    link_id = add_link(tool, f"problem:{MHA}")
    student = tool.browser()
    landed = tool.launch(student, "sam", link_id)
    assert landed.status_code == 303, landed.text
    assert me(student) != sam
    with tool.sessions() as session:
        identity = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-sam")).one()
        assert identity.user_id != sam and identity.linked_at is None


def test_a_trusted_platform_s_email_of_an_account_in_another_role_changes_nothing(
    tool: Tool,
) -> None:
    trust(tool, True)
    with tool.sessions() as session:
        # Sam's LMS email is an instructor's account here: an LMS learner must not become it.
        create_user(session, LMS_EMAIL["sam"], "An instructor", "instructor")
        session.commit()
    browser = tool.browser()
    tool.first_launch(browser, "ines", "deep-link")
    link_id = add_link(tool, f"problem:{MHA}")
    before = tool.counts()
    refused = tool.launch(tool.browser(), "sam", link_id)
    assert refused.status_code == 409 and 'data-code="email_role_conflict"' in refused.text
    assert "tj_session" not in refused.cookies
    assert tool.counts() == before


def test_a_person_links_their_lms_account_once_signed_in(tool: Tool) -> None:
    course_id, _, sam = web_course(tool)
    tool.first_launch(tool.browser(), "ines", "deep-link")
    link_id = add_link(tool, f"problem:{MHA}")
    student = tool.browser()
    landed = tool.launch(student, "sam", link_id)
    destination = landed.headers["location"]
    made = me(student)
    assert student.cookies.get(IDENTITY_COOKIE)
    asks = student.get("/lti/link-account")
    assert asks.status_code == 200 and 'id="sign-in"' in asks.text  # the LMS-made account
    assert student.post("/lti/link-account").status_code == 403
    # Another browser, signed in as Sam, cannot take the offer: it lacks the launch's cookie.
    other = tool.browser()
    sign_in(tool, other, sam)
    refused = other.post("/lti/link-account", follow_redirects=False)
    assert refused.status_code == 403 and 'data-code="no_identity"' in refused.text
    # An administrator's account is never linked: the LMS's admins can act as its people.
    with tool.sessions() as session:
        admin_id = session.scalars(select(User.id).where(User.role == "admin")).one()
    sign_in(tool, student, admin_id)
    as_admin = student.post("/lti/link-account", follow_redirects=False)
    assert as_admin.status_code == 403 and 'data-code="admin_account"' in as_admin.text
    # Sam signs in to his own account in the launching browser, then confirms.
    sign_in(tool, student, sam)
    confirm = student.get("/lti/link-account")
    assert confirm.status_code == 200 and LMS_EMAIL["sam"] in confirm.text
    linked = student.post("/lti/link-account", follow_redirects=False)
    assert linked.status_code == 303 and linked.headers["location"] == destination
    with tool.sessions() as session:
        identity = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-sam")).one()
        assert identity.user_id == sam and identity.linked_at is not None
        lms_course = session.scalars(select(LtiContext.course_id)).one()
        held = session.scalar(
            select(Membership.role).where(
                Membership.course_id == lms_course, Membership.user_id == sam
            )
        )
        left = session.scalar(select(Membership.id).where(Membership.user_id == made))
    assert held == "student" and left is None
    assert lms_course != course_id
    # Once: the offer is gone; the next launch signs in as Sam's own account, with no offer.
    assert student.post("/lti/link-account").status_code in (403, 409)
    again = tool.browser()
    assert tool.launch(again, "sam", link_id).status_code == 303
    assert me(again) == sam and not again.cookies.get(IDENTITY_COOKIE)


def test_a_web_made_assignment_s_scores_flow_back_once_linked(tool: Tool) -> None:
    course_id, ines, sam = web_course(tool)
    trust(tool, True)
    browser = tool.browser()
    tool.link(browser, tool.launch(browser, "ines", "deep-link"), f"course:{course_id}")
    assignment_id = make_assignment(
        tool.sessions, course_id, ((MHA, 1.0),), due_at=utcnow() + timedelta(days=7)
    )
    # Sam opens the LMS once (matched by email), then works on the web.
    student = tool.browser()
    tool.launch(student, "sam", add_link(tool, f"problem:{MHA}"))
    assert me(student) == sam
    platform_items = len(tool.platform.line_items)
    path = f"/courses/{course_id}/assignments/{assignment_id}/problems/{MHA}"
    assert submit(student, path, CORRECT)["verdict"] == "accepted"
    policy = policy_of(tool.api.app.state.settings)  # type: ignore[attr-defined]
    with tool.sessions() as session:
        assert session.scalars(select(LtiScoreSend)).all() == []  # not linked: nothing goes
    instructor = tool.browser()
    sign_in(tool, instructor, ines)
    csrf = {"X-CSRF-Token": instructor.get("/api/auth/me").json()["csrf_token"]}
    url = f"/api/courses/{course_id}/assignments/{assignment_id}/lti/line-item"
    # A URL that is not one of the LMS course's line items: refused (the token never goes).
    foreign = instructor.put(
        url, json={"line_item_url": "https://attacker.example/lineitems/1"}, headers=csrf
    )
    assert foreign.status_code == 422 and foreign.json()["error"]["code"] == "not_a_line_item"
    made = instructor.put(url, json={}, headers=csrf)
    assert made.status_code == 200, made.text
    assert made.json()["queued"] == 1 and made.json()["line_item_url"] is None
    assert send_due(tool.sessions, policy) == 1
    assert len(tool.platform.line_items) == platform_items + 1
    (sent,) = tool.platform.scores
    assert sent.body["userId"] == "sub-sam" and sent.body["scoreGiven"] == 1.0
    created = sent.path.removesuffix("/scores")
    assert tool.platform.line_items[tool.platform.url + created]["resourceId"] == (
        f"tj-assignment-{assignment_id}"
    )
    # Picking another column: one the LMS made, listed through AGS.
    column = tool.platform.make_line_item({"label": "Homework 1 (LMS)", "scoreMaximum": 10})
    listed = instructor.get(f"/api/courses/{course_id}/lti/line-items")
    assert listed.status_code == 200, listed.text
    assert column["id"] in {i["id"] for i in listed.json()}
    picked = instructor.put(url, json={"line_item_url": column["id"]}, headers=csrf)
    assert picked.status_code == 200, picked.text
    assert send_due(tool.sessions, policy) == 1
    assert tool.platform.scores[-1].path == column["id"].removeprefix(tool.platform.url) + "/scores"
