"""A course from nothing to an exported gradebook, in real Chromium against the real server and
sandbox: the instructor signs in on /login and creates a course on /courses; an assignment with a
due date, a later deadline at 80 % and the after_due_date feedback policy; a student signs in from
/join/{code}, joins, submits a wrong then a correct answer before the due date (summary view), the
due date passes, a late submission (80 %, full view); the instructor's gradebook shows the score
and its rule, an extension from the gradebook page restores full credit, an adjustment leaves an
audit trail, and the CSV export says so. Screenshots: tests/artifacts/web/course-flow-*.png."""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from app.core.config import REPO_ROOT
from tests.assignments.test_feedback import HIDDEN_FAIL
from tests.support.codes import CORRECT
from tests.web.conftest import Server, serving
from tests.web.helpers import GRADING_TIMEOUT_MS, set_code, shot

pytestmark = pytest.mark.timeout(240)

PROBLEM = "multi-head-attention"
INSTRUCTOR = ("prof@example.edu", "Professor Ada", "instructor")
STUDENT = ("sam@example.edu", "Sam Student", "member")
PASSWORD = "correct horse battery staple"
# The flow's budget: the brief asks for well under two minutes on a shared machine.
FLOW_BUDGET_SECONDS = 90.0


@pytest.fixture(scope="module")
def site(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("course-flow")) as server:
        for email, name, role in (INSTRUCTOR, STUDENT):
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "app",
                    "users",
                    "create",
                    "--password-stdin",
                    *("--email", email, "--name", name, "--role", role),
                ],
                cwd=REPO_ROOT,
                env=server.env,
                input=PASSWORD + "\n",
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
        yield server


def new_page(browser: Browser, server: Server) -> tuple[BrowserContext, Page, list[str]]:
    context = browser.new_context(
        viewport={"width": 1366, "height": 900}, base_url=server.url, accept_downloads=True
    )
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return context, page, errors


def sign_in(page: Page, email: str) -> None:
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()


def page_api(page: Page, method: str, path: str, body: object = None) -> tuple[int, Any]:
    """A JSON call with the page's own session cookie and CSRF token, as the page's scripts do."""
    status, data = page.evaluate(
        """async ([method, path, body]) => {
            const me = await (await fetch("/api/auth/me")).json();
            const r = await fetch(path, {
                method,
                headers: {"Content-Type": "application/json", "X-CSRF-Token": me.csrf_token},
                body: body === null ? undefined : JSON.stringify(body),
            });
            const text = await r.text();
            return [r.status, text ? JSON.parse(text) : null];
        }""",
        [method, path, body],
    )
    return status, data


def submit(page: Page, code: str, verdict: str) -> None:
    set_code(page, code)
    page.locator("#submit").click()
    page.locator(f'#verdict[data-verdict="{verdict}"]').wait_for(timeout=GRADING_TIMEOUT_MS)
    expect(page.locator("#progress")).not_to_have_class("progress active")


def test_a_course_from_nothing_to_an_exported_gradebook(browser: Browser, site: Server) -> None:
    start = time.perf_counter()
    prof_context, prof, prof_errors = new_page(browser, site)
    student_context, student, student_errors = new_page(browser, site)
    try:
        # The instructor signs in through the form and creates the course on /courses.
        prof.goto("/login?next=/courses")
        sign_in(prof, INSTRUCTOR[0])
        expect(prof).to_have_url(f"{site.url}/courses")
        shot(prof, "course-flow-01-signed-in")
        prof.get_by_label("Title").fill("Deep Learning 101")
        prof.get_by_role("button", name="Create course").click()
        card = prof.locator(".course-card", has_text="Deep Learning 101")
        expect(card).to_have_count(1)
        course_id = card.get_attribute("data-course-id")
        join_code = card.locator("code").inner_text()
        shot(prof, "course-flow-02-course-created")

        # The assignment: the course home has no form for one, so the instructor's page makes it
        # through the API with its own session.
        due = datetime.now(UTC) + timedelta(hours=1)
        status, assignment = page_api(
            prof,
            "POST",
            f"/api/courses/{course_id}/assignments",
            {
                "title": "Attention homework",
                "problems": [{"problem_id": PROBLEM, "points": 10}],
                "due_at": due.isoformat(),
                "late_deadlines": [{"until": (due + timedelta(days=7)).isoformat(), "credit": 0.8}],
                "feedback": "after_due_date",
                "scoring": "last",
            },
        )
        assert status == 201, assignment
        base = f"/api/courses/{course_id}/assignments/{assignment['id']}"
        prof.goto(f"/courses/{course_id}")
        expect(prof.locator(f'tr[data-assignment="{assignment["id"]}"]')).to_contain_text(
            "Attention homework"
        )
        shot(prof, "course-flow-03-assignment")

        # The student follows the join link, signs in from it and joins.
        student.goto(f"/join/{join_code}")
        student.get_by_role("link", name="Sign in to join").click()
        sign_in(student, STUDENT[0])
        expect(student).to_have_url(f"{site.url}/join/{join_code}")
        student.locator("#join-button").click()
        expect(student.locator(".message.success")).to_contain_text("You joined Deep Learning 101")
        shot(student, "course-flow-04-joined")
        student.get_by_role("link", name="Go to the course").click()
        row = student.locator(f'tr[data-assignment="{assignment["id"]}"]')
        expect(row).to_contain_text("on time: 100 %")
        row.get_by_role("link", name="Attention homework").click()
        student.locator(f'tr[data-problem="{PROBLEM}"]').get_by_role("link").click()
        student.locator(".cm-content").wait_for()
        expect(student.locator("#assignment-credit")).to_have_text("on time: 100 %")

        # Before the due date: the summary view, hidden cases only as a count.
        submit(student, HIDDEN_FAIL, "runtime_error")
        expect(student.locator(".hidden-summary")).to_have_text("0 of 9 hidden cases passed")
        report = student.locator("#result-body").inner_text()
        assert "hidden-1" not in report and "hidden test" not in report.lower()
        shot(student, "course-flow-05-wrong-summary", full_page=True)
        submit(student, CORRECT, "accepted")
        expect(student.locator(".hidden-summary")).to_have_text("9 of 9 hidden cases passed")
        assert "hidden-1" not in student.locator("#result-body").inner_text()
        shot(student, "course-flow-06-correct-summary", full_page=True)

        # The due date passes: the instructor moves it to now through the API (no sleeping).
        status, moved = page_api(prof, "PATCH", base, {"due_at": datetime.now(UTC).isoformat()})
        assert status == 200, moved

        # After the due date: 80 % credit with its rule, and the full view.
        student.reload()
        student.locator(".cm-content").wait_for()
        expect(student.locator("#assignment-credit")).to_have_text("late: 80 %")
        # Not the same text as before: an identical resubmission would be asked about first.
        submit(student, CORRECT + "\n# resubmitted after the due date\n", "accepted")
        expect(student.locator(".hidden-summary")).to_have_count(0)
        expect(student.locator("#result-body")).to_contain_text("hidden-1")
        shot(student, "course-flow-07-late-full-view", full_page=True)

        # The gradebook: the last attempt counts, late, at 80 %.
        prof.goto(f"/courses/{course_id}/assignments/{assignment['id']}/gradebook")
        student_row = prof.locator("#gradebook-table tbody tr", has_text=STUDENT[1])
        cell = student_row.locator("button.gb-cell")
        expect(cell).to_have_attribute("aria-label", re.compile(r": 8 points\."))
        expect(cell).to_have_attribute("title", re.compile(r"^last attempt \(3\): late: 80 %"))
        shot(prof, "course-flow-08-gradebook-late")

        # An extension from the gradebook: the late attempt is on time again, full credit.
        student_row.get_by_role("button", name="Extension / override").click()
        prof.locator("#override-note").fill("Sick note")
        prof.locator("#override-save").click()
        expect(prof.locator("#gb-status")).to_contain_text("Granted 1 override")
        expect(student_row.locator(".gb-override")).to_contain_text("ext. until")
        expect(cell).to_have_attribute("aria-label", re.compile(r": 10 points\."))
        expect(cell).to_have_attribute("title", re.compile(r"^last attempt \(3\): extension"))
        shot(prof, "course-flow-09-extension")

        # An adjustment with a comment, and its audit trail.
        cell.click()
        prof.locator("#adjust-score").fill("9.5")
        prof.locator("#adjust-comment").fill("Style: no docstring")
        prof.locator("#adjust-save").click()
        expect(prof.locator("#adjust-message")).to_have_text("Saved.")
        trail = prof.locator("#audit-trail li")
        expect(trail).to_have_count(1)
        expect(trail.first).to_contain_text("Professor Ada: 10 → 9.5")
        expect(trail.first).to_contain_text("Style: no docstring")
        shot(prof, "course-flow-10-adjusted")

        # The CSV export says the same.
        with prof.expect_download() as download:
            prof.locator("#export-gradebook").click()
        rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
        assert len(rows) == 1
        assert rows[0]["email"] == STUDENT[0]
        assert rows[0]["Multi-head attention (multi-head-attention) [10]"] == "9.5"
        assert rows[0]["total [10]"] == "9.5"
        # The long form: each attempt with what the dates made of it. The extension's window (to
        # the default, a week past the due date) covers every attempt now; the wrong one earned
        # its public cases' share (2 of 11 cases).
        with prof.expect_download() as download:
            prof.locator("#export-attempts").click()
        attempts = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
        got = [(a["attempt"], a["verdict"], a["points"], a["rule"]) for a in attempts]
        assert got == [
            ("1", "runtime_error", "1.8182", "extension: 100 %"),
            ("2", "accepted", "10", "extension: 100 %"),
            ("3", "accepted", "10", "extension: 100 %"),
        ], got
    finally:
        prof_context.close()
        student_context.close()
    assert not prof_errors, prof_errors
    assert not student_errors, student_errors
    elapsed = time.perf_counter() - start
    print(f"course flow: {elapsed:.1f} s")
    assert elapsed < FLOW_BUDGET_SECONDS
