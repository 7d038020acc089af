"""In a real browser: a signed-in student opens the course, the assignment and its problem,
submits before the due date, and sees the summary view of a report that failed hidden cases."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from app.core.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from tests.assignments.test_feedback import HIDDEN_FAIL
from tests.support.browser_session import session_cookie
from tests.support.people import People
from tests.web.conftest import (  # noqa: F401
    CHROMIUM_ARGS,
    Server,
    browser,
    serving_people,
    web_assets,
)
from tests.web.helpers import GRADING_TIMEOUT_MS, set_code, shot

PROBLEM = "multi-head-attention"


@pytest.fixture(scope="module")
def course_server(
    web_assets: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, People]]:
    with serving_people(tmp_path_factory.mktemp("assignments-web")) as served:
        yield served


def test_student_submits_and_sees_the_summary(
    browser: Browser,  # noqa: F811
    course_server: tuple[Server, People],
) -> None:
    server, people = course_server
    course_id = people.courses["course"]
    due = datetime.now(UTC) + timedelta(days=2)
    created = httpx.post(
        f"{server.url}/api/courses/{course_id}/assignments",
        json={
            "title": "Attention homework",
            "problems": [{"problem_id": PROBLEM, "points": 10}],
            "due_at": due.isoformat(),
            "late_deadlines": [{"until": (due + timedelta(days=7)).isoformat(), "credit": 0.8}],
            "feedback": "summary",
            "max_attempts": 3,
        },
        headers=people.headers("instructor"),
    )
    assert created.status_code == 201, created.text
    assignment_id = created.json()["id"]
    engine = make_engine(Settings(data_dir=Path(server.env["GRADER_DATA_DIR"])))
    name, value, _ = session_cookie(make_sessionmaker(engine), people.users["student"])
    engine.dispose()

    context = browser.new_context(viewport={"width": 1366, "height": 900}, base_url=server.url)
    context.add_cookies([{"name": name, "value": value, "url": server.url}])
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"/courses/{course_id}")
        row = page.locator(f'tr[data-assignment="{assignment_id}"]')
        expect(row).to_contain_text("Attention homework")
        expect(row).to_contain_text("on time: 100 %")
        shot(page, "assignments-course-home")
        row.get_by_role("link", name="Attention homework").click()
        problem_row = page.locator(f'tr[data-problem="{PROBLEM}"]')
        expect(problem_row).to_contain_text("10")
        # The student's own score, from the gradebook's grades/me, with the rule that decided it.
        expect(problem_row.locator("td[data-score]")).to_have_text("0 / 10 (no graded attempt)")
        shot(page, "assignments-assignment-page")
        problem_row.get_by_role("link").click()
        page.locator(".cm-content").wait_for()
        expect(page.locator("#assignment-attempts")).to_have_text("0 of 3 used, 3 left")
        expect(page.locator("#assignment-credit")).to_have_text("on time: 100 %")
        expect(page.locator("#assignment-feedback")).to_contain_text("hidden cases as a count")
        set_code(page, HIDDEN_FAIL)
        page.locator("#submit").click()
        page.locator('#verdict[data-verdict="runtime_error"]').wait_for(timeout=GRADING_TIMEOUT_MS)
        expect(page.locator(".hidden-summary")).to_have_text("0 of 9 hidden cases passed")
        expect(page.locator("#assignment-attempts")).to_have_text("1 of 3 used, 2 left")
        result = page.locator("#result-body").inner_text()
        for n in range(1, 10):
            assert f"hidden-{n}" not in result
        assert "hidden test" not in result.lower()
        # No time of the run (issue 35): no "finished ...", and the stopwatch is cleared.
        assert "finished" not in result
        expect(page.locator("#elapsed")).to_have_text("")
        shot(page, "assignments-problem-summary", full_page=True)
    finally:
        context.close()
    assert not errors, errors
