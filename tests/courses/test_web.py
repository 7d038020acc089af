"""The courses pages in a real browser: a student joins by code and finds the course on
/courses; an instructor uploads a roster with a mistake, reads the failing rows, fixes the file
and sees the roster. Screenshots go to tests/artifacts/web/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from app.core.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from tests.support.browser_session import session_cookie
from tests.support.people import People
from tests.web.conftest import (  # noqa: F401
    Server,
    browser,
    browsing,
    serving_people,
    web_assets,
)
from tests.web.helpers import axe_violations, shot

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def site(
    web_assets: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, People, Settings]]:
    root = tmp_path_factory.mktemp("courses-web")
    with serving_people(root) as (server, people):
        yield server, people, Settings(data_dir=root / "data")


def _signed_in(page: Page, settings: Settings, server: Server, user_id: int) -> None:
    engine = make_engine(settings)
    try:
        name, value, _ = session_cookie(make_sessionmaker(engine), user_id)
    finally:
        engine.dispose()
    page.context.add_cookies([{"name": name, "value": value, "url": server.url}])


@pytest.fixture
def page(browser: object, site: tuple[Server, People, Settings]) -> Iterator[Page]:  # noqa: F811
    with browsing(browser, site[0].url) as pg:
        assert isinstance(pg, Page)
        yield pg


def test_a_signed_out_visitor_sees_the_course_and_is_asked_to_sign_in(
    page: Page, site: tuple[Server, People, Settings]
) -> None:
    page.goto("/join/join-course")
    expect(page.get_by_role("heading", name="Join Test course")).to_be_visible()
    link = page.get_by_role("link", name="Sign in to join")
    expect(link).to_have_attribute("href", "/login?next=%2Fjoin%2FJOIN-COURSE")
    shot(page, "courses-join-signed-out")
    missing = page.goto("/join/NO-SUCH-CODE")
    assert missing is not None and missing.status == 404
    expect(page.get_by_role("alert")).to_contain_text("No open course takes the code")


def test_a_student_joins_by_code_and_sees_the_course(
    page: Page, site: tuple[Server, People, Settings]
) -> None:
    server, people, settings = site
    _signed_in(page, settings, server, people.users["outsider"])
    page.goto("/courses")
    expect(page.locator("#course-list")).to_contain_text("You are in no course yet")
    page.goto("/join/JOIN-COURSE")
    expect(page.get_by_role("heading", name="Join Test course")).to_be_visible()
    shot(page, "courses-join-page")
    page.get_by_role("button", name="Join Test course").click()
    expect(page.get_by_role("status")).to_contain_text("You joined Test course as a student")
    shot(page, "courses-joined")
    page.get_by_role("link", name="All your courses").click()
    card = page.locator(f'.course-card[data-course-id="{people.courses["course"]}"]')
    expect(card).to_contain_text("Test course")
    expect(card).to_contain_text("Student")
    expect(card.get_by_role("link", name="Test course")).to_have_attribute(
        "href", f"/courses/{people.courses['course']}"
    )
    # A student has no roster link and no "New course" form.
    expect(card.get_by_role("link", name="Roster")).to_have_count(0)
    expect(page.get_by_role("heading", name="New course")).to_have_count(0)
    assert axe_violations(page) == []
    shot(page, "courses-student-list")


BAD_CSV = (
    "email,name,section\n"
    "ada@example.edu,Ada Lovelace,A\n"
    "not-an-email,Bad Row,A\n"
    "grace@example.edu,Grace Hopper,B\n"
    "ada@example.edu,Ada again,A\n"
)
FIXED_CSV = (
    "email,name,section\n"
    "ada@example.edu,Ada Lovelace,A\n"
    "alan@example.edu,Alan Turing,A\n"
    "grace@example.edu,Grace Hopper,B\n"
)


def test_an_instructor_fixes_a_roster_file_and_sees_the_roster(
    page: Page, site: tuple[Server, People, Settings]
) -> None:
    server, people, settings = site
    course = people.courses["course"]
    _signed_in(page, settings, server, people.users["instructor"])
    page.goto("/courses")
    expect(page.get_by_role("heading", name="New course")).to_be_visible()
    page.get_by_role("link", name="Roster").first.click()
    expect(page).to_have_url(re.compile(rf"/courses/{course}/roster$"))
    expect(page.get_by_role("heading", name="Roster: Test course")).to_be_visible()
    expect(page.locator("#roster-table")).to_contain_text("student@example.edu")

    upload = page.get_by_label("CSV file")
    upload.set_input_files(
        files=[{"name": "roster.csv", "mimeType": "text/csv", "buffer": BAD_CSV.encode()}]
    )
    page.get_by_role("button", name="Upload roster").click()
    errors = page.locator("#roster-errors table")
    expect(errors).to_contain_text("not-an-email")
    rows = errors.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("3")
    expect(rows.nth(1)).to_contain_text("also on line 2")
    expect(page.locator("#roster-table")).not_to_contain_text("grace@example.edu")
    shot(page, "courses-roster-row-errors", full_page=True)

    upload.set_input_files(
        files=[{"name": "roster.csv", "mimeType": "text/csv", "buffer": FIXED_CSV.encode()}]
    )
    page.get_by_role("button", name="Upload roster").click()
    expect(page.get_by_text("Imported: 3 enrolled (3 new accounts)")).to_be_visible()
    expect(page.locator("#roster-errors")).to_be_empty()
    table = page.locator("#roster-table")
    for email in ("ada@example.edu", "alan@example.edu", "grace@example.edu"):
        expect(table).to_contain_text(email)

    # Section B only; then a password link for a student, shown to copy.
    page.get_by_label("Show section").select_option("B")
    expect(page.locator("#roster-count")).to_have_text("2 members")
    page.get_by_role("button", name="Password link for Grace Hopper").click()
    link = page.get_by_role("textbox", name="Password link for Grace Hopper")
    expect(link).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/reset/[A-Za-z0-9_-]{40,}$"))
    assert axe_violations(page) == []
    shot(page, "courses-roster", full_page=True)
