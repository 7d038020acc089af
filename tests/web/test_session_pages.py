"""The pages that work from the signed-in session, in a real browser on one server: /instructor
without a pasted token, the course page's links (roster, join code, assignments, gradebooks),
the roster's "Sync roster" button, and the admin page (people: search, role, deactivate; LMS
platforms; the configuration in force with its secrets redacted)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from app.core.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from tests.support.browser_session import session_cookie
from tests.support.people import People
from tests.web.conftest import Server, browsing, serving_people
from tests.web.helpers import axe_violations, shot

pytestmark = pytest.mark.timeout(240)

SMTP_PASSWORD = "smtp-pass-web-3391"
Site = tuple[Server, People, Settings]


@pytest.fixture(scope="module")
def site(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("session-pages")
    with serving_people(root, GRADER_SMTP_PASSWORD=SMTP_PASSWORD) as (server, people):
        yield server, people, Settings(data_dir=root / "data")


def signed_in(browser: object, site: Site, who: str) -> Iterator[Page]:
    server, people, settings = site
    engine = make_engine(settings)
    try:
        name, value, _ = session_cookie(make_sessionmaker(engine), people.users[who])
    finally:
        engine.dispose()
    with browsing(browser, server.url) as page:
        assert isinstance(page, Page)
        page.context.add_cookies([{"name": name, "value": value, "url": server.url}])
        yield page


@pytest.fixture
def as_instructor(browser: object, site: Site) -> Iterator[Page]:
    yield from signed_in(browser, site, "instructor")


@pytest.fixture
def as_admin(browser: object, site: Site) -> Iterator[Page]:
    yield from signed_in(browser, site, "admin")


def test_instructor_page_works_from_the_session_without_a_token(as_instructor: Page) -> None:
    page = as_instructor
    page.goto("/instructor")
    expect(page.locator("#token-status")).to_contain_text("Signed in as Instructor (instructor)")
    page.locator("#problem-select").select_option("multi-head-attention")
    # The catalog's cases are listed for the session alone: nothing was pasted.
    expect(page.locator("#cases-status")).to_contain_text("case")
    expect(page.locator("#cases-table")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('tj:instructor-token')") is None
    shot(page, "instructor-signed-in")


def test_course_page_links_roster_join_code_and_gradebooks(as_instructor: Page, site: Site) -> None:
    server, people, _ = site
    course = people.courses["course"]
    due = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    made = httpx.post(
        f"{server.url}/api/courses/{course}/assignments",
        json={"title": "Linked homework", "problems": [{"problem_id": "softmax-backward"}],
              "due_at": due},
        headers=people.headers("instructor"),
    )  # fmt: skip
    assert made.status_code == 201, made.text
    assignment = made.json()["id"]
    page = as_instructor
    page.goto(f"/courses/{course}")
    links = page.get_by_role("navigation", name="Course")
    expect(links.get_by_role("link", name="Roster")).to_have_attribute(
        "href", f"/courses/{course}/roster"
    )
    expect(links.locator("#join-code")).to_have_text("JOIN-COURSE")
    expect(links.get_by_role("link", name="join link")).to_have_attribute(
        "href", re.compile(r"/join/JOIN-COURSE$")
    )
    expect(links.get_by_role("link", name="Assignments")).to_have_attribute(
        "href", "#assignments-heading"
    )
    gradebook = page.get_by_role("link", name="Gradebook of Linked homework")
    expect(gradebook).to_have_attribute(
        "href", f"/courses/{course}/assignments/{assignment}/gradebook"
    )
    assert axe_violations(page) == []
    shot(page, "course-page-links")
    gradebook.click()
    expect(page).to_have_url(re.compile(rf"/assignments/{assignment}/gradebook$"))


def test_roster_sync_button_calls_the_lms_roster_sync(as_instructor: Page, site: Site) -> None:
    course = site[1].courses["course"]
    page = as_instructor
    page.goto(f"/courses/{course}/roster")
    with page.expect_response(re.compile(r"/lti/roster-sync$")) as answer:
        page.get_by_role("button", name="Sync roster").click()
    assert answer.value.status == 409  # this course is linked to no LMS course
    expect(page.locator("#sync-status")).to_contain_text(
        "no LMS course with a roster service is linked here"
    )


def test_admin_page_people_platforms_and_redacted_configuration(
    as_admin: Page, site: Site, browser: object
) -> None:
    server, people, _ = site
    lms = "https://lms.example.edu"
    registered = httpx.post(
        f"{server.url}/api/lti/platforms",
        json={"name": "Campus Moodle", "issuer": lms, "client_id": "tj-client",
              "deployment_ids": ["dep-1"], "auth_login_url": f"{lms}/auth",
              "auth_token_url": f"{lms}/token", "keyset_url": f"{lms}/jwks"},
        headers=people.headers("admin"),
    )  # fmt: skip
    assert registered.status_code == 201, registered.text
    page = as_admin
    page.goto("/")
    # (The administrator is named "Admin" too: their account link has that name.)
    page.locator('#nav-account a[href="/admin"]').click()
    expect(page.get_by_role("heading", name="Administration", level=1)).to_be_visible()

    page.get_by_label("Search people").fill("student_b")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#people-count")).to_have_text("1 account")
    row = page.locator('#people-table tr[data-user="student_b@example.edu"]')
    row.get_by_label("Role of Student B").select_option("instructor")
    expect(page.locator("#people-status")).to_have_text("Student B is now instructor.")
    row.get_by_role("button", name="Deactivate Student B").click()
    expect(row.locator(".state")).to_have_text("deactivated")
    who = httpx.get(f"{server.url}/api/auth/me", headers=people.headers("student_b"))
    assert who.status_code == 403  # the deactivated account's token is refused at once
    row.get_by_role("button", name="Reactivate Student B").click()
    expect(row.locator(".state")).to_have_text("active")

    platform = page.locator(f'#platforms-table tr[data-platform="{registered.json()["id"]}"]')
    expect(platform).to_contain_text("Campus Moodle")
    expect(platform).to_contain_text("tj-client")
    expect(platform).to_contain_text("dep-1")
    config = page.locator("#config-table")
    expect(config.locator('tr[data-setting="GRADER_SMTP_PASSWORD"]')).to_contain_text(
        "(set, hidden)"
    )
    expect(config.locator('tr[data-setting="GRADER_SANDBOX"]')).to_be_visible()
    assert SMTP_PASSWORD not in page.content()
    assert axe_violations(page) == []
    shot(page, "admin-page", full_page=True)

    # Anyone else sees the page refuse, and no admin link.
    for other in signed_in(browser, site, "instructor"):
        other.goto("/admin")
        expect(other.get_by_role("alert")).to_have_text(
            "This page is for the deployment's administrators."
        )
        expect(other.locator('#nav-account a[href="/admin"]')).to_have_count(0)
