"""The similarity report's page in real Chromium, on a served app whose own runner computes
the report in the background: an instructor follows the insight panel's link and asks for it;
the two planted copies rank first with their evidence; the side-by-side view marks the shared
lines; a student of the course gets no report. Screenshot in
tests/artifacts/web/similarity-report.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy.orm import sessionmaker

from app.core.config import Settings
from app.db.engine import make_engine
from tests.gradebook.factories import MHA, T0, add_attempt, make_assignment
from tests.similarity.solutions import COPY_RENAMED, COPY_REORDERED, INDEPENDENT
from tests.support.browser_session import World
from tests.support.browser_session import signed_in as signed_in_as
from tests.support.people import add_student, seed_people
from tests.web.conftest import browser, serving, web_assets  # noqa: F401
from tests.web.helpers import shot

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="module")
def world(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:  # noqa: F811
    root = tmp_path_factory.mktemp("similarity-web")
    with serving(root, GRADER_SIMILARITY_POLL_SECONDS="0.2") as server:
        engine = make_engine(Settings(data_dir=root / "data"))
        sessions = sessionmaker(engine, expire_on_commit=False)
        people = seed_people(sessions)
        assignment = make_assignment(sessions, people.courses["course"])
        codes = dict(INDEPENDENT) | {"copy_renamed": COPY_RENAMED, "copy_reordered": COPY_REORDERED}
        for key, code in codes.items():
            add_attempt(
                sessions, assignment, add_student(sessions, people, key), MHA, 1, T0, 1.0, code=code
            )
        try:
            yield World(server.url, sessions, people, assignment)
        finally:
            engine.dispose()


def signed_in(browser: Browser, world: World, who: str) -> Page:  # noqa: F811
    return signed_in_as(browser, world, who, timeout_ms=30_000)


def report_url(world: World) -> str:
    course = world.people.courses["course"]
    return f"/courses/{course}/assignments/{world.assignment}/problems/{MHA}/similarity"


def test_instructor_sees_the_planted_copies_first(browser: Browser, world: World) -> None:  # noqa: F811
    page = signed_in(browser, world, "instructor")
    course = world.people.courses["course"]
    page.goto(f"/courses/{course}/assignments/{world.assignment}/gradebook")
    page.locator(f'.insight-problem[data-problem="{MHA}"] a.insight-similarity').click()
    page.wait_for_url(f"**{report_url(world)}")
    expect(page.locator("#sim-status")).to_contain_text("No report yet")
    page.locator("#sim-compute").click()
    rows = page.locator("#sim-pairs tbody tr")
    expect(rows).to_have_count(3)
    copies = {"Reshape", "Copy Renamed", "Copy Reordered"}
    for i in range(3):
        students = rows.nth(i).locator("td").nth(1).inner_text()
        assert set(students.split(" · ")) <= copies, students
    expect(rows.first.locator('[data-kind="code"]')).to_contain_text("distinctive code")
    expect(page.locator("#sim-report")).to_contain_text("not a verdict")
    rows.first.get_by_role("button", name="Side by side").click()
    expect(page.locator("#sim-pair-heading")).to_contain_text("Pair 1")
    assert page.locator("#sim-pair .sim-code").count() == 2
    assert page.locator("#sim-pair li.sim-shared").count() >= 10
    shot(page, "similarity-report", full_page=True)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_student_gets_no_report(browser: Browser, world: World) -> None:  # noqa: F811
    page = signed_in(browser, world, "copy_renamed")
    page.goto(report_url(world))
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.locator("#sim-pairs")).to_have_count(0)
