"""The assignment page's "LMS gradebook" panel in real Chromium, against the live server and the
mock platform: absent until the course is linked to an LMS course; then its instructor sees
where the scores go, picks one of the LMS course's columns (read through AGS) or a new one, and
gets a clear answer when the LMS is down or the column was taken meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from app.lti.models import LtiContext, LtiLineItem, LtiPlatform
from tests.gradebook.factories import MHA, make_assignment
from tests.support.browser_session import World, signed_in
from tests.support.lti_platform import CONTEXT, DEPLOYMENT, MockPlatform
from tests.support.people import seed_people
from tests.web.conftest import browser, serving, web_assets  # noqa: F401

pytestmark = pytest.mark.timeout(300)


@dataclass
class Setup:
    world: World
    platform: MockPlatform
    other: int  # a second assignment of the course


@pytest.fixture(scope="module")
def setup(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:  # noqa: F811
    root = tmp_path_factory.mktemp("lti-line-item-page")
    platform = MockPlatform().start()
    with serving(root) as server:
        engine = make_engine(Settings(data_dir=root / "data"))
        sessions = make_sessionmaker(engine)
        people = seed_people(sessions)
        course = people.courses["course"]
        first = make_assignment(sessions, course, ((MHA, 10.0),), title="Homework 1")
        other = make_assignment(sessions, course, ((MHA, 5.0),), title="Quiz")
        platform.register_at(server.url, people.tokens["admin"])
        try:
            yield Setup(World(server.url, sessions, people, first), platform, other)
        finally:
            platform.stop()
            engine.dispose()


def link_lms_course(sessions: sessionmaker[Session], course_id: int, lineitems: str) -> int:
    """What the instructor's first launch and pick leave: the LMS course linked here."""
    with sessions() as session:
        platform_id = session.scalars(select(LtiPlatform.id)).one()
        row = LtiContext(
            platform_id=platform_id,
            context_id=CONTEXT,
            course_id=course_id,
            deployment_id=DEPLOYMENT,
            lineitems_url=lineitems,
        )
        session.add(row)
        session.commit()
        return row.id


def panel_of(page: Page, setup: Setup) -> Page:
    world = setup.world
    page.goto(f"/courses/{world.people.courses['course']}/assignments/{world.assignment}")
    page.get_by_role("heading", name="Homework 1").wait_for()
    return page


def test_an_instructor_links_an_assignment_to_an_lms_column(
    browser: Browser,  # noqa: F811
    setup: Setup,
) -> None:
    world, platform = setup.world, setup.platform
    page = panel_of(signed_in(browser, world, "instructor"), setup)
    page.get_by_role("button", name="Edit").wait_for()
    expect(page.locator("#lms-column")).to_have_count(0)  # no LMS course linked yet

    context_id = link_lms_course(
        world.sessions, world.people.courses["course"], f"{platform.url}/lineitems"
    )
    column = platform.make_line_item({"label": "Homework 1 (LMS)", "scoreMaximum": 10})
    quiz = platform.make_line_item({"label": "Quiz (LMS)", "scoreMaximum": 5})
    with world.sessions() as session:
        session.add(LtiLineItem(context_id=context_id, assignment_id=setup.other, url=quiz["id"]))
        session.commit()

    panel_of(page, setup)
    current = page.locator(f'#lms-column-current dd[data-context="{context_id}"]')
    expect(current).to_have_text("not linked: its scores do not go to this LMS course")
    pick = page.get_by_label("Send this assignment's scores to")
    expect(pick.locator("option")).to_have_text(
        [
            "A new column for this assignment",
            "Homework 1 (LMS) (out of 10)",
            f"Quiz (LMS) (out of 5) (linked to assignment {setup.other})",
        ]
    )
    expect(pick.locator("option").nth(2)).to_be_disabled()  # another assignment's column
    pick.select_option(label="Homework 1 (LMS) (out of 10)")
    page.get_by_role("button", name="Link").click()
    expect(page.locator("#lms-column-status")).to_have_text(
        "Linked. 0 current scores on their way to the LMS."
    )
    expect(current).to_have_text("Homework 1 (LMS) (out of 10)")
    with world.sessions() as session:
        url = session.scalar(
            select(LtiLineItem.url).where(LtiLineItem.assignment_id == world.assignment)
        )
    assert url == column["id"]

    # The column is taken by another assignment between the page's read and the click.
    other_column = platform.make_line_item({"label": "Project (LMS)", "scoreMaximum": 20})
    panel_of(page, setup)
    page.get_by_label("Send this assignment's scores to").select_option(
        label="Project (LMS) (out of 20)"
    )
    with world.sessions() as session:
        held = session.scalars(
            select(LtiLineItem).where(LtiLineItem.assignment_id == setup.other)
        ).one()
        held.url = other_column["id"]
        session.commit()
    page.get_by_role("button", name="Link").click()
    expect(page.locator("#lms-column-status")).to_have_text(
        f"that line item is linked to assignment {setup.other}"
    )
    expect(current).to_have_text("Homework 1 (LMS) (out of 10)")  # unchanged

    # The LMS is down: the panel says so, still shows the link, and a new column can be asked.
    platform.down = True
    try:
        panel_of(page, setup)
        expect(page.locator("#lms-column-error")).to_contain_text(
            "The LMS's columns could not be read: the LMS did not list its line items"
        )
        expect(current).to_have_text(column["id"])
        page.get_by_label("Send this assignment's scores to").select_option(
            label="A new column for this assignment"
        )
        page.get_by_role("button", name="Link").click()
        expect(page.locator("#lms-column-status")).to_contain_text("Linked.")
        expect(current).to_have_text("a column made for it on the first score")
    finally:
        platform.down = False
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()

    # Neither a TA nor a student sees the panel (the state is the instructors').
    for who in ("ta", "student"):
        other = panel_of(signed_in(browser, world, who), setup)
        other.get_by_role("link", name="Download your submissions (CSV)").wait_for()
        expect(other.locator("#lms-column")).to_have_count(0)
        other.context.close()
