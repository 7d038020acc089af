"""In a real browser, at a deadline: a student's submission waits behind a busy grader, the page
shows its place in the queue, the due date passes while it waits, and once graded the page says
it arrived on time; nowhere does it say "closed". Then the instructor's insight panel shows the
rush: the attempt in its minute by arrival, and the wait from arrival to verdict."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from app.assignments.models import Assignment
from app.core.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from tests.support.browser_session import session_cookie
from tests.support.codes import CORRECT, sleeper
from tests.support.people import People, seed_people
from tests.web.conftest import (  # noqa: F401
    Server,
    browser,
    serving,
    web_assets,
)
from tests.web.helpers import GRADING_TIMEOUT_MS, set_code

PROBLEM = "multi-head-attention"
QUEUED = r"Queued: (next in line|\d+ ahead of you)"


@pytest.fixture(scope="module")
def one_grader(
    web_assets: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Server, People]]:
    """One grading worker, so two sleeping submissions keep the queue busy."""
    root = tmp_path_factory.mktemp("rush-web")
    with serving(root, GRADER_WORKERS="1") as server:
        engine = make_engine(Settings(data_dir=root / "data"))
        try:
            yield server, seed_people(make_sessionmaker(engine))
        finally:
            engine.dispose()


@pytest.mark.slow
def test_queue_place_while_waiting_and_on_time_after_the_due_date(
    browser: Browser,  # noqa: F811
    one_grader: tuple[Server, People],
) -> None:
    server, people = one_grader
    course_id = people.courses["course"]
    created = httpx.post(
        f"{server.url}/api/courses/{course_id}/assignments",
        json={
            "title": "Rush homework",
            "problems": [{"problem_id": PROBLEM, "points": 10}],
            "due_at": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
            "feedback": "visible",
        },
        headers=people.headers("instructor"),
    )
    assert created.status_code == 201, created.text
    assignment_id = created.json()["id"]
    # The grader is busy: one practice submission running, one queued behind it.
    for n in range(2):
        busy = httpx.post(
            f"{server.url}/api/problems/{PROBLEM}/submissions",
            json={"code": sleeper(6, n)},
            headers=people.headers("instructor"),
        )
        assert busy.status_code == 202, busy.text

    engine = make_engine(Settings(data_dir=Path(server.env["GRADER_DATA_DIR"])))
    sessions = make_sessionmaker(engine)
    name, value, _ = session_cookie(sessions, people.users["student"])
    context = browser.new_context(viewport={"width": 1366, "height": 900}, base_url=server.url)
    context.add_cookies([{"name": name, "value": value, "url": server.url}])
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"/courses/{course_id}/assignments/{assignment_id}/problems/{PROBLEM}")
        page.locator(".cm-content").wait_for()
        set_code(page, CORRECT)
        page.locator("#submit").click()
        expect(page.locator("#progress-text")).to_have_text(re.compile(QUEUED), timeout=30_000)
        # The due date passes while the submission waits (it arrived before it).
        with sessions() as session:
            assignment = session.get(Assignment, assignment_id)
            assert assignment is not None
            assignment.due_at = datetime.now(UTC)
            session.commit()
        page.locator('#verdict[data-verdict="accepted"]').wait_for(timeout=GRADING_TIMEOUT_MS)
        expect(page.locator("#assignment-credit")).to_have_text(
            "due date passed: your last submission arrived on time and counts"
        )
        assert "closed" not in page.locator("body").inner_text().lower()
        # The instructor's insight panel: the attempt counted by its arrival, and the wait.
        context.clear_cookies()
        name, value, _ = session_cookie(sessions, people.users["instructor"])
        context.add_cookies([{"name": name, "value": value, "url": server.url}])
        page.goto(f"/courses/{course_id}/assignments/{assignment_id}/gradebook")
        rush = page.locator("#insight-rush")
        expect(rush).to_contain_text("The rush around the due date", timeout=30_000)
        expect(rush).to_contain_text(re.compile(r"Arrival to verdict: median \d+\.\d s"))
        minutes = rush.locator(".rush-minutes tbody tr")
        expect(minutes).to_have_count(1)
        expect(minutes.locator("th")).to_have_text(re.compile(r"due minute|1 min before"))
        expect(minutes.locator("td.num")).to_have_text("1")
    finally:
        context.close()
        engine.dispose()
    assert not errors, errors
