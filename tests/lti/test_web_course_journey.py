"""Issue 38's second "Done when" journey in real Chromium, against the live server and the mock
platform (not trusted for email), on SQLite and PostgreSQL: a course made on the web is linked
to the LMS course by its instructor in the browser (she links her LMS account to her web
account first, signing in); the roster sync holds the student who is already a member instead
of making him a second account; she links a web-made assignment to an LMS gradebook column on
the assignment's page; the student, signed in, opens TensorJudge from the LMS, confirms linking
his account, submits on the web, and his score reaches the platform's AGS endpoint."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.auth.accounts import create_user
from app.auth.passwords import hash_password
from app.auth.tokens import issue_token
from app.core.config import Settings
from app.courses.models import Course, Membership
from app.db.base import utcnow
from app.db.engine import make_engine, make_sessionmaker
from app.lti.models import LtiPendingMember, LtiUser
from tests.gradebook.factories import MHA, make_assignment
from tests.lti.test_browser import wait_until
from tests.support.browser_session import session_cookie
from tests.support.codes import CORRECT
from tests.support.lti_platform import SCORE_MEDIA, Link, MockPlatform
from tests.web.conftest import browser, browsing, serving, web_assets  # noqa: F401
from tests.web.helpers import GRADING_TIMEOUT_MS, set_code

PASSWORD = "correct horse battery"


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "database_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)],
    indirect=True,
)
def test_an_lms_course_joins_a_web_course_and_a_web_made_score_reaches_the_lms(
    browser: Browser,  # noqa: F811
    web_assets: Path,  # noqa: F811
    tmp_path: Path,
    database_url: str | None,
) -> None:
    platform = MockPlatform().start()
    database = {"GRADER_DATABASE_URL": database_url} if database_url else {}
    try:
        with serving(
            tmp_path,
            GRADER_LTI_SEND_INTERVAL_SECONDS="0.2",
            GRADER_LTI_RETRY_BASE_SECONDS="0.2",
            GRADER_LTI_RETRY_MAX_SECONDS="0.5",
            **database,
        ) as server:
            engine = make_engine(Settings(data_dir=tmp_path / "data", database_url=database_url))
            try:
                journey(browser, server.url, make_sessionmaker(engine), platform)
            finally:
                engine.dispose()
    finally:
        platform.stop()


def journey(
    browser: Browser,  # noqa: F811
    url: str,
    sessions: sessionmaker[Session],
    platform: MockPlatform,
) -> None:
    # The web course: Ines teaches it, Sam is its student, both with the emails the LMS has.
    with sessions() as session:
        admin = create_user(session, "admin@example.edu", "Admin", "admin")
        _, token = issue_token(session, admin.id, "tests")
        course = Course(title="ML on the web")
        session.add(course)
        session.flush()
        ines = create_user(
            session, "ines@lms.example.edu", "Ines", "instructor", hash_password(PASSWORD)
        )
        sam = create_user(session, "sam@lms.example.edu", "Sam")
        session.add(Membership(course_id=course.id, user_id=ines.id, role="instructor"))
        session.add(Membership(course_id=course.id, user_id=sam.id, role="student"))
        session.commit()
        course_id, ines_id, sam_id = course.id, ines.id, sam.id
    assignment = make_assignment(
        sessions, course_id, ((MHA, 10.0),), title="Homework 1", due_at=utcnow() + timedelta(7)
    )
    platform.register_at(url, token)
    platform.links["home"] = Link(id="home", title="TensorJudge")
    column = platform.make_line_item({"label": "Homework 1 (LMS)", "scoreMaximum": 10})

    with browsing(browser, platform.url) as page:
        # Ines opens TensorJudge from the LMS: her LMS account is new here, so she links it to
        # her web account first (signing in), then links the LMS course to her web course.
        page.goto("/course?as=ines")
        page.get_by_role("button", name="TensorJudge", exact=True).click()
        page.get_by_role("heading", name="Set up Machine Learning 101 on TensorJudge").wait_for()
        expect(page.get_by_label("ML on the web")).to_have_count(0)
        page.get_by_role("link", name="Sign in to link your account").click()
        page.get_by_role("link", name="Sign in", exact=True).click()
        page.get_by_label("Email").fill("ines@lms.example.edu")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.get_by_role(
            "heading", name="Link Ines Instructor to your TensorJudge account"
        ).wait_for()
        page.get_by_role("button", name="Link").click()
        page.get_by_role("heading", name="Your LMS account is linked").wait_for()
        page.goto(f"{platform.url}/course?as=ines")
        page.get_by_role("button", name="TensorJudge", exact=True).click()
        page.get_by_label("ML on the web").check()
        page.get_by_role("button", name="Link").click()
        page.wait_for_url(f"{url}/courses/{course_id}")

        # The roster: Sam is held for linking (no second account), Carol was made.
        page.goto(f"{url}/courses/{course_id}/roster")
        page.get_by_role("button", name="Sync roster").click()
        expect(page.locator("#sync-status")).to_contain_text("1 will be linked on first launch")
        sam_row = page.locator(f'#roster-table tr[data-user-id="{sam_id}"]')
        expect(sam_row).to_contain_text("in the LMS, will be linked on first launch")

        # The web-made assignment's scores go to the LMS's own column.
        page.goto(f"{url}/courses/{course_id}/assignments/{assignment}")
        pick = page.get_by_label("Send this assignment's scores to")
        pick.select_option(label="Homework 1 (LMS) (out of 10)")
        page.get_by_role("button", name="Link").click()
        expect(page.locator("#lms-column-status")).to_contain_text("Linked.")

    with browsing(browser, platform.url) as page:
        # Sam, signed in on the web, opens TensorJudge from the LMS and confirms the link.
        name, value, _ = session_cookie(sessions, sam_id)
        page.context.add_cookies([{"name": name, "value": value, "url": url}])
        page.goto("/course?as=sam")
        page.get_by_role("button", name="TensorJudge", exact=True).click()
        page.get_by_role("heading", name="Link Sam Student to your TensorJudge account").wait_for()
        expect(page.get_by_text("sam@lms.example.edu")).to_be_visible()
        page.get_by_role("button", name="Link").click()
        page.wait_for_url(f"{url}/courses/{course_id}")
        page.goto(f"{url}/courses/{course_id}/assignments/{assignment}/problems/{MHA}")
        page.locator(".cm-content").wait_for()
        set_code(page, CORRECT)
        page.locator("#submit").click()
        page.locator('#verdict[data-verdict="accepted"]').wait_for(timeout=GRADING_TIMEOUT_MS)
        wait_until(lambda: len(platform.scores) == 1, 60.0)

    (sent,) = platform.scores
    assert sent.content_type == SCORE_MEDIA
    assert sent.path == column["id"].removeprefix(platform.url) + "/scores"
    assert sent.body["userId"] == "sub-sam"
    assert sent.body["scoreGiven"] == sent.body["scoreMaximum"] == 10.0
    assert sent.body["gradingProgress"] == "FullyGraded"
    with sessions() as session:
        identities = dict(session.execute(select(LtiUser.subject, LtiUser.user_id)).all())
        assert identities["sub-ines"] == ines_id and identities["sub-sam"] == sam_id
        assert session.scalar(select(func.count()).select_from(LtiPendingMember)) == 0
        students = session.scalars(
            select(Membership.user_id).where(
                Membership.course_id == course_id, Membership.role == "student"
            )
        ).all()
    # Sam once, and Carol from the roster: nobody twice in the gradebook.
    assert sorted(students) == sorted([sam_id, identities["sub-carol"]])
