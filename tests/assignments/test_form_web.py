"""In a real browser: an instructor creates an assignment through the course page's form (two
problems, a later deadline at 80 %, the summary policy), meets the API's 422 beside the form with
nothing typed lost, edits the title and publishes feedback on the assignment's page, deletes
another after confirming; a student's pages show none of these controls, a TA's only the
gradebook link."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, expect

from app.core.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from tests.support.browser_session import session_cookie
from tests.support.people import People
from tests.web.conftest import (  # noqa: F401
    CHROMIUM_ARGS,
    Server,
    browser,
    serving_people,
    web_assets,
)
from tests.web.helpers import axe_violations, shot

# Not the server's zone (UTC): the form must send the browser's own offset.
ZONE = "America/New_York"


@pytest.fixture(scope="module")
def course_server(
    web_assets: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, People]]:
    with serving_people(tmp_path_factory.mktemp("assignment-form-web")) as served:
        yield served


def signed_in(browser: Browser, server: Server, user_id: int) -> BrowserContext:  # noqa: F811
    engine = make_engine(Settings(data_dir=Path(server.env["GRADER_DATA_DIR"])))
    name, value, _ = session_cookie(make_sessionmaker(engine), user_id)
    engine.dispose()
    context = browser.new_context(
        viewport={"width": 1366, "height": 900}, base_url=server.url, timezone_id=ZONE
    )
    context.add_cookies([{"name": name, "value": value, "url": server.url}])
    context.set_default_timeout(15_000)
    return context


def local(moment: datetime) -> str:
    """What a datetime-local input holds for ``moment`` in the browser's zone."""
    return moment.astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%dT%H:%M")


def test_instructor_creates_edits_and_publishes_through_the_form(
    browser: Browser,  # noqa: F811
    course_server: tuple[Server, People],
) -> None:
    server, people = course_server
    course_id = people.courses["course"]
    api = f"{server.url}/api/courses/{course_id}/assignments"
    due = (datetime.now(UTC) + timedelta(days=3)).replace(second=0, microsecond=0)
    later = due + timedelta(days=7)

    context = signed_in(browser, server, people.users["instructor"])
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"/courses/{course_id}")
        page.get_by_role("button", name="New assignment").click()
        form = page.locator("form.assignment-form")
        form.get_by_label("Title").fill("Attention week")
        form.get_by_label("Problem 1", exact=True).select_option("multi-head-attention")
        form.get_by_label("Points of problem 1").fill("10")
        form.get_by_role("button", name="Add a problem").click()
        form.get_by_label("Points of problem 2").fill("5")
        # Released after it is due: the API refuses, and says which field.
        form.get_by_label("Release (optional)").fill(local(due + timedelta(days=1)))
        form.get_by_label("Due", exact=True).fill(local(due))
        form.get_by_role("button", name="Add a later deadline").click()
        form.get_by_label("Later deadline 1", exact=True).fill(local(later))
        form.get_by_label("Credit until later deadline 1 (%)").fill("80")
        form.get_by_label("Summary", exact=True).check()
        expect(form).to_contain_text("hidden cases only as a count passed")
        form.get_by_label("Max attempts per problem").fill("5")
        form.get_by_label("Penalty per attempt (%)").fill("0, 5, 10")
        assert axe_violations(page) == []
        shot(page, "assignment-form-new", full_page=True)

        # A second problem row left unchosen: pydantic's complaint, on that row's select.
        form.get_by_role("button", name="Create assignment").click()
        alert = form.get_by_role("alert")
        expect(alert).to_contain_text("(problems.1.problem_id)")
        expect(form.get_by_label("Problem 2", exact=True)).to_be_focused()
        expect(form.get_by_label("Problem 2", exact=True)).to_have_attribute("aria-invalid", "true")
        form.get_by_label("Problem 2", exact=True).select_option("masked-attention")
        form.get_by_role("button", name="Create assignment").click()
        expect(alert).to_have_text("release_at must be before due_at (release_at)")
        expect(form.get_by_label("Problem 2", exact=True)).not_to_have_attribute(
            "aria-invalid", "true"
        )
        release = form.get_by_label("Release (optional)")
        expect(release).to_have_attribute("aria-invalid", "true")
        expect(release).to_be_focused()
        # Nothing typed is lost.
        expect(form.get_by_label("Title")).to_have_value("Attention week")
        expect(form.get_by_label("Problem 2", exact=True)).to_have_value("masked-attention")
        expect(form.get_by_label("Credit until later deadline 1 (%)")).to_have_value("80")
        expect(form.get_by_label("Summary", exact=True)).to_be_checked()
        expect(form.get_by_label("Penalty per attempt (%)")).to_have_value("0, 5, 10")
        assert axe_violations(page) == []
        shot(page, "assignment-form-error", full_page=True)
        assert httpx.get(api, headers=people.headers("instructor")).json() == []

        release.fill("")
        form.get_by_role("button", name="Create assignment").click()
        expect(form).to_have_count(0)
        row = page.locator("tr[data-assignment]", has_text="Attention week")
        expect(row).to_be_visible()
        expect(row.locator("td").nth(2)).to_have_text("2")  # the Problems column
        shot(page, "assignment-form-created")

        (created,) = httpx.get(api, headers=people.headers("instructor")).json()
        assert [(p["problem_id"], p["points"]) for p in created["problems"]] == [
            ("multi-head-attention", 10.0),
            ("masked-attention", 5.0),
        ]
        assert datetime.fromisoformat(created["due_at"]) == due
        assert created["release_at"] is None
        (deadline,) = created["late_deadlines"]
        assert datetime.fromisoformat(deadline["until"]) == later
        assert deadline["credit"] == 0.8
        assert created["feedback"] == "summary"
        assert created["max_attempts"] == 5
        assert created["attempt_penalties"] == [0, 0.05, 0.1]
        assert created["feedback_published_at"] is None

        # The assignment's page: edit (the form comes filled), then publish the feedback.
        row.get_by_role("link", name="Attention week", exact=True).click()
        page.get_by_role("link", name="Gradebook").wait_for()
        page.get_by_role("button", name="Edit").click()
        edit = page.locator("form.assignment-form")
        expect(edit.get_by_label("Due", exact=True)).to_have_value(local(due))
        expect(edit.get_by_label("Credit until later deadline 1 (%)")).to_have_value("80")
        expect(edit.get_by_label("Summary", exact=True)).to_be_checked()
        expect(edit.get_by_label("Penalty per attempt (%)")).to_have_value("0, 5, 10")
        edit.get_by_label("Title").fill("Attention, week 1")
        assert axe_violations(page) == []
        shot(page, "assignment-form-edit", full_page=True)
        edit.get_by_role("button", name="Save changes").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Attention, week 1")
        expect(page.locator("#instructor-message")).to_have_text("Saved.")
        expect(page.get_by_role("button", name="Publish scores")).to_have_count(0)
        page.get_by_role("button", name="Publish feedback").click()
        expect(page.locator("#instructor-message")).to_contain_text("Feedback published")
        expect(page.get_by_role("button", name="Publish feedback")).to_have_count(0)
        expect(page.locator("#feedback-policy")).to_contain_text("published: full reports now")
        shot(page, "assignment-form-published")

        after = httpx.get(f"{api}/{created['id']}", headers=people.headers("instructor")).json()
        assert after["title"] == "Attention, week 1"
        assert after["feedback_published_at"] is not None
        # A PATCH of the whole form changed nothing else.
        for key in ("problems", "due_at", "late_deadlines", "feedback", "attempt_penalties"):
            assert after[key] == created[key], key

        # Delete asks first; keeping it keeps it, confirming removes it.
        spare = httpx.post(
            api,
            json={
                "title": "Spare",
                "problems": [{"problem_id": "softmax-backward"}],
                "due_at": due.isoformat(),
            },
            headers=people.headers("instructor"),
        )
        assert spare.status_code == 201, spare.text
        page.goto(f"/courses/{course_id}/assignments/{spare.json()['id']}")
        page.get_by_role("button", name="Delete", exact=True).click()
        page.get_by_role("button", name="Keep it").click()
        page.get_by_role("button", name="Delete", exact=True).click()
        page.get_by_role("button", name="Delete for good").click()
        page.wait_for_url(f"**/courses/{course_id}")
        expect(page.locator("tr[data-assignment]")).to_have_count(1)
        left = httpx.get(api, headers=people.headers("instructor")).json()
        assert [a["title"] for a in left] == ["Attention, week 1"]
    finally:
        context.close()
    assert not errors, errors

    # A student: the assignment, and no instructor control anywhere.
    context = signed_in(browser, server, people.users["student"])
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"/courses/{course_id}")
        expect(page.locator("tr[data-assignment]", has_text="Attention, week 1")).to_be_visible()
        expect(page.get_by_role("button", name="New assignment")).to_have_count(0)
        page.get_by_role("link", name="Attention, week 1").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Attention, week 1")
        expect(page.locator("tr[data-problem]")).to_have_count(2)
        expect(page.locator("#main").get_by_role("button")).to_have_count(0)
        expect(page.get_by_role("link", name="Gradebook")).to_have_count(0)
        expect(page.locator("form")).to_have_count(0)
        shot(page, "assignment-form-student-view")
    finally:
        context.close()
    # A TA: the gradebook link, none of the instructors' controls.
    context = signed_in(browser, server, people.users["ta"])
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"/courses/{course_id}/assignments/{created['id']}")
        expect(page.get_by_role("link", name="Gradebook")).to_be_visible()
        expect(page.get_by_role("heading", level=1)).to_have_text("Attention, week 1")
        expect(page.locator("#main").get_by_role("button")).to_have_count(0)
        page.goto(f"/courses/{course_id}")
        expect(page.locator("tr[data-assignment]")).to_have_count(1)
        expect(page.get_by_role("button", name="New assignment")).to_have_count(0)
    finally:
        context.close()
    assert not errors, errors
