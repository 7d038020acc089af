"""Feedback in real Chromium: an instructor writes one hint for a diagnosis from the insight
panel and it reaches the students whose latest attempt has it (and not the others); a TA's
comment reaches the student with its author, the staff note does not; the adjustment dialog
says which field each box writes. Screenshots in tests/artifacts/web/."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy.orm import sessionmaker

from app.core.config import Settings
from app.db.engine import make_engine
from tests.gradebook.factories import MHA, T0, add_attempt, make_assignment
from tests.support.browser_session import World, signed_in
from tests.support.people import seed_people
from tests.web.conftest import browser, serving, web_assets  # noqa: F401
from tests.web.helpers import shot

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
HOUR = timedelta(hours=1)


@pytest.fixture(scope="module")
def world(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:  # noqa: F811
    root = tmp_path_factory.mktemp("feedback-web")
    with serving(root) as server:
        engine = make_engine(Settings(data_dir=root / "data"))
        sessions = sessionmaker(engine, expire_on_commit=False)
        people = seed_people(sessions)
        a = make_assignment(sessions, people.courses["course"], release_at=T0 - 30 * HOUR)
        s, b = people.users["student"], people.users["student_b"]
        add_attempt(sessions, a, s, MHA, 1, T0 - 3 * HOUR, 0.2, codes=["heads-split"])
        add_attempt(sessions, a, s, MHA, 2, T0 - 2 * HOUR, 0.4, codes=["heads-split"])
        add_attempt(sessions, a, b, MHA, 1, T0 - 2 * HOUR, 0.6, codes=["no-scale"])
        try:
            yield World(server.url, sessions, people, a)
        finally:
            engine.dispose()


def assignment_url(world: World) -> str:
    return f"/courses/{world.people.courses['course']}/assignments/{world.assignment}"


def test_a_hint_for_a_diagnosis_reaches_only_its_students(browser: Browser, world: World) -> None:  # noqa: F811
    page = signed_in(browser, world, "instructor")
    page.goto(f"{assignment_url(world)}/gradebook")
    item = page.locator(
        '#insight [data-problem="multi-head-attention"] li[data-code="heads-split"]'
    )
    expect(item).to_contain_text("1 stuck of 1")
    # The score histogram is drawn, with its numbers; the statistics CSV is a link away.
    page.locator("#load-statistics").click()
    histogram = page.locator('#insight .insight-stats[data-problem="multi-head-attention"] svg')
    expect(histogram.locator("rect.bar")).to_have_count(10)
    expect(page.locator("#export-statistics")).to_have_attribute(
        "href",
        f"/api/courses/{world.people.courses['course']}/assignments/{world.assignment}/statistics.csv",
    )
    item.locator("button.hint-open").click()
    item.locator("textarea.hint-text").fill(
        "Split the heads as **(h, d_k)**, not (d_k, h). <script>window.pwned = 1</script>"
    )
    item.locator("button.hint-save").click()
    expect(item.locator(".hint-status")).to_contain_text("Saved: the 1 student with it read it now")
    shot(page, "feedback-hint-from-insight")
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()

    mine = signed_in(browser, world, "student")
    mine.goto(assignment_url(world))
    hint = mine.locator('#my-feedback [data-hint="heads-split"]')
    expect(hint).to_contain_text("Instructor")
    expect(hint.locator("strong")).to_have_text("(h, d_k)")
    expect(hint).to_contain_text("<script>window.pwned = 1</script>")  # shown as text
    assert mine.evaluate("() => window.pwned === undefined")
    shot(mine, "feedback-hint-student-view")
    mine.context.close()

    other = signed_in(browser, world, "student_b")
    other.goto(assignment_url(world))
    expect(other.locator("#total")).to_be_visible()
    expect(other.locator("#my-feedback")).to_have_count(0)
    other.context.close()


def test_comment_reaches_the_student_note_does_not(browser: Browser, world: World) -> None:  # noqa: F811
    page = signed_in(browser, world, "ta")
    page.goto(f"{assignment_url(world)}/gradebook")
    student_b = world.people.users["student_b"]
    page.locator(f'button.gb-cell[data-user="{student_b}"][data-problem="{MHA}"]').click()
    panel = page.locator("#adjust-panel")
    expect(panel.locator('label[for="adjust-comment"]')).to_contain_text("staff only")
    panel.locator(".feedback-editor-comment textarea").fill("Nice *scaling* idea; check the mask.")
    panel.locator('.feedback-editor-comment button[data-save="comment"]').click()
    expect(panel.locator(".feedback-editor-comment [role=status]")).to_have_text("Saved.")
    panel.locator(".feedback-editor-note textarea").fill("Discussed in office hours")
    panel.locator('.feedback-editor-note button[data-save="note"]').click()
    expect(panel.locator(".feedback-editor-note [role=status]")).to_have_text("Saved.")
    shot(page, "feedback-adjust-dialog")
    page.context.close()

    mine = signed_in(browser, world, "student_b")
    mine.goto(assignment_url(world))
    box = mine.locator(f'#my-feedback [data-problem="{MHA}"]').first
    expect(box).to_contain_text("Ta")
    expect(box.locator("em")).to_have_text("scaling")
    expect(mine.locator("main")).not_to_contain_text("office hours")
    mine.context.close()
