"""The LMS journey in a real browser (Debian's Chromium through Playwright) against the live
server and the mock platform: the instructor deep-links a problem from the LMS course page; a
student opens the link, lands on the problem signed in, submits a wrong then a right solution
through the editor; the platform receives each score while up, none during an outage, and the
held one once it is back; NRPS has enrolled the student who never launched."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser
from sqlalchemy import select

from app.auth.accounts import create_user
from app.auth.tokens import issue_token
from app.core.config import Settings
from app.courses.models import Membership
from app.db.engine import make_engine, make_sessionmaker
from app.lti.models import LtiUser
from tests.support.codes import CORRECT, WRONG
from tests.support.lti_platform import SCORE_MEDIA, MockPlatform
from tests.web.conftest import browser, browsing, serving, web_assets  # noqa: F401
from tests.web.helpers import GRADING_TIMEOUT_MS, set_code

PROBLEM_TITLE = "Multi-head attention"


def wait_until(check: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture
def platform() -> Iterator[MockPlatform]:
    mock = MockPlatform().start()
    try:
        yield mock
    finally:
        mock.stop()


@pytest.mark.timeout(600)
def test_the_lms_journey_in_a_browser(
    browser: Browser,  # noqa: F811
    web_assets: Path,  # noqa: F811
    platform: MockPlatform,
    tmp_path: Path,
    database_url: str | None,
) -> None:
    database = {"GRADER_DATABASE_URL": database_url} if database_url else {}
    with serving(
        tmp_path,
        GRADER_LTI_SEND_INTERVAL_SECONDS="0.2",
        GRADER_LTI_RETRY_BASE_SECONDS="0.2",
        GRADER_LTI_RETRY_MAX_SECONDS="0.5",
        **database,
    ) as server:
        engine = make_engine(Settings(data_dir=tmp_path / "data", database_url=database_url))
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            admin = create_user(session, "admin@example.edu", "Admin", "admin")
            _, token = issue_token(session, admin.id, "tests")
            session.commit()
        platform.register_at(server.url, token)

        with browsing(browser, platform.url) as page:
            page.goto("/course?as=ines")
            page.get_by_role("button", name="Add TensorJudge content").click()
            # The LMS course's first launch: Ines links it to a new course.
            page.get_by_role(
                "heading", name="Set up Machine Learning 101 on TensorJudge"
            ).wait_for()
            page.get_by_label("A new course named Machine Learning 101").check()
            page.get_by_role("button", name="Link").click()
            page.get_by_role("heading", name="Add TensorJudge to Machine Learning 101").wait_for()
            page.get_by_label(PROBLEM_TITLE).check()
            page.get_by_role("button", name="Add to the course").click()
            # The pick makes the course's assignment and its line item at the LMS before the
            # answer goes back: a loaded CI worker once took more than the default 15 s.
            page.get_by_role("heading", name="Added").wait_for(timeout=60_000)
        (link,) = platform.links.values()
        assert link.title == PROBLEM_TITLE and link.lineitem is not None

        with browsing(browser, platform.url) as page:
            page.goto("/course?as=sam")
            page.get_by_role("button", name=PROBLEM_TITLE).click()
            page.wait_for_url(f"{server.url}/courses/*/assignments/*/problems/multi-head-attention")
            page.locator(".cm-content").wait_for()
            set_code(page, WRONG)
            page.locator("#submit").click()
            page.locator('#verdict[data-verdict="wrong_answer"]').wait_for(
                timeout=GRADING_TIMEOUT_MS
            )
            wait_until(lambda: len(platform.scores) == 1)
            platform.down = True
            set_code(page, CORRECT)
            page.locator("#submit").click()
            page.locator('#verdict[data-verdict="accepted"]').wait_for(timeout=GRADING_TIMEOUT_MS)
            time.sleep(2)  # the sender tries (and fails) several times meanwhile
            assert len(platform.scores) == 1
            platform.down = False
            wait_until(lambda: len(platform.scores) == 2)

        first, second = platform.scores
        assert first.content_type == second.content_type == SCORE_MEDIA
        assert first.body["userId"] == second.body["userId"] == "sub-sam"
        assert first.body["scoreGiven"] < second.body["scoreGiven"] == second.body["scoreMaximum"]
        assert second.body["scoreMaximum"] == 10.0  # a deep-linked problem: the course default
        assert second.body["gradingProgress"] == "FullyGraded"
        assert first.path == second.path == f"{link.lineitem.removeprefix(platform.url)}/scores"
        assert len(platform.line_items) == 1
        with sessions() as session:
            carol = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-carol")).one()
            role = session.scalar(
                select(Membership.role).where(Membership.user_id == carol.user_id)
            )
        assert role == "student"
        engine.dispose()
