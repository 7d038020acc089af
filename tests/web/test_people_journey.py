"""Getting people in, from an empty server to published scores, with no shell step (issue 38's
first "Done when"): real Chromium, the real server under ``python -m app serve`` mailing a real
SMTP server (aiosmtpd) on 127.0.0.1, on SQLite and PostgreSQL.

The first administrator comes from the setup link the server printed; they add an instructor on
/admin, who chooses a password from the mailed link, creates a course and uploads a 30-student
roster with invitations on; the SMTP server receives the 30 invitations; three students choose
passwords from their mailed links and submit, one in the browser, one with ``tj``, one from a
notebook (a real kernel); someone not on the roster joins by the course's link with no account
(the mailed link makes it); the due date comes near and the 28 with nothing accepted get a
reminder; the scores are published and all 31 are told."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import nbformat
import pytest
from aiosmtpd.controller import Controller
from nbclient import NotebookClient
from playwright.sync_api import Browser, Page, expect

from tests.client.test_login import tj
from tests.conftest import truncate_all
from tests.mail.conftest import Inbox, free_port
from tests.support.codes import CORRECT
from tests.web.conftest import Server, serving
from tests.web.test_course_flow import new_page, page_api, submit

pytestmark = pytest.mark.timeout(600)

PROBLEM = "multi-head-attention"
PASSWORD = "correct horse battery staple"
STUDENTS = [(f"s{i:02d}@example.edu", f"Student {i:02d}") for i in range(1, 31)]
SETUP = re.compile(r"/setup/[A-Za-z0-9_-]+")
RESET = re.compile(r"http://127\.0\.0\.1:\d+(/reset/[A-Za-z0-9_-]+)")
VERIFY = re.compile(r"http://127\.0\.0\.1:\d+(/verify/[A-Za-z0-9_-]+)")
LATE = "late@example.edu"


def _texts(inbox: Inbox, subject: str) -> dict[str, str]:
    """Each recipient's plain text of the mails whose subject contains ``subject``."""
    out = {}
    for _, [to], message in inbox.mails:
        if subject in str(message["Subject"]):
            part = message.get_body(("plain",))
            assert part is not None
            out[to] = str(part.get_content())
    return out


def _wait(inbox: Inbox, done: Callable[[], bool], what: str) -> None:
    while not done():
        inbox.arrived.clear()
        if done():
            break
        assert inbox.arrived.wait(120), f"{what}: {len(inbox.mails)} mails so far"


def _link(text: str) -> str:
    [path] = RESET.findall(text)
    return str(path)


def _set_password(page: Page, path: str) -> None:
    page.goto(path)
    page.locator("#reset-password").fill(PASSWORD)
    page.locator("#reset-again").fill(PASSWORD)
    page.get_by_role("button", name="Set password and sign in").click()
    expect(page).to_have_url(re.compile(r"/account$"))


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)], scope="module"
)
def empty_server(
    request: pytest.FixtureRequest, web_assets: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Inbox]]:
    """A server that has never run, mailing a fresh SMTP server; its database by ``param``."""
    inbox = Inbox(port=free_port())
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port)
    controller.start()
    env = {
        "GRADER_MAILER": "smtp",
        "GRADER_SMTP_PORT": str(inbox.port),
        "GRADER_SMTP_FROM": "judge@example.edu",
        "GRADER_MAIL_SEND_INTERVAL_SECONDS": "0.2",
        "GRADER_MAIL_REMINDER_INTERVAL_SECONDS": "0.5",
    }
    if request.param == "postgresql":
        url: str = request.getfixturevalue("postgres_url")
        truncate_all(url)
        env["GRADER_DATABASE_URL"] = url
    try:
        with serving(tmp_path_factory.mktemp(f"people-{request.param}"), **env) as server:
            yield server, inbox
    finally:
        controller.stop()


def test_from_an_empty_server_to_published_scores(
    browser: Browser, empty_server: tuple[Server, Inbox], tmp_path: Path
) -> None:
    server, inbox = empty_server
    pages = [new_page(browser, server) for _ in range(3)]
    (_, admin, _), (_, prof, _), (_, sam, _) = pages
    try:
        # The first administrator, from the link the server printed when it started.
        [setup] = SETUP.findall(server.log.read_text())
        admin.goto(setup)
        admin.locator("#setup-email").fill("root@example.edu")
        admin.locator("#setup-name").fill("Root Admin")
        admin.locator("#setup-password").fill(PASSWORD)
        admin.locator("#setup-again").fill(PASSWORD)
        admin.get_by_role("button", name="Create and sign in").click()
        expect(admin).to_have_url(re.compile(r"/account$"))

        # They add the instructor on /admin, who is mailed a link to choose a password.
        admin.goto("/admin")
        admin.locator("#add-name").fill("Professor Ada")
        admin.locator("#add-email").fill("prof@example.edu")
        expect(admin.locator("#add-role")).to_have_value("instructor")
        admin.get_by_role("button", name="Add a person").click()
        expect(admin.locator("#add-status")).to_contain_text("Professor Ada (instructor) is added")
        _wait(inbox, lambda: "prof@example.edu" in _texts(inbox, "password"), "instructor's mail")
        _set_password(prof, _link(_texts(inbox, "password")["prof@example.edu"]))

        # The instructor's course, its assignment (due in three days) and the roster upload.
        prof.goto("/courses")
        prof.get_by_label("Title").fill("Deep Learning 101")
        prof.get_by_role("button", name="Create course").click()
        card = prof.locator(".course-card", has_text="Deep Learning 101")
        expect(card).to_have_count(1)
        course = card.get_attribute("data-course-id")
        join_code = card.locator("code").inner_text()
        status, assignment = page_api(
            prof,
            "POST",
            f"/api/courses/{course}/assignments",
            {
                "title": "Attention homework",
                "problems": [{"problem_id": PROBLEM, "points": 10}],
                "due_at": (datetime.now(UTC) + timedelta(days=3)).isoformat(),
            },
        )
        assert status == 201, assignment
        base = f"/api/courses/{course}/assignments/{assignment['id']}"
        roster = tmp_path / "roster.csv"
        roster.write_text("email,name\n" + "".join(f"{e},{n}\n" for e, n in STUDENTS))
        prof.goto(f"/courses/{course}/roster")
        prof.locator("#roster-file").set_input_files(roster)
        expect(prof.locator("#roster-invite")).to_be_checked()
        prof.get_by_role("button", name="Upload roster").click()
        expect(prof.locator("#roster-upload-form + .message")).to_contain_text(
            "30 enrolled (30 new accounts)"
        )
        expect(prof.locator("#roster-upload-form + .message")).to_contain_text("30 invited")

        # The SMTP server receives the 30 invitations, each with its own link.
        invited = lambda: _texts(inbox, "You are invited to Deep Learning 101")  # noqa: E731
        _wait(inbox, lambda: len(invited()) == 30, "30 invitations")
        assert sorted(invited()) == [e for e, _ in STUDENTS]
        links = {to: _link(text) for to, text in invited().items()}
        assert len(set(links.values())) == 30

        # Student 1 chooses a password from the mail and submits in the browser.
        _set_password(sam, links["s01@example.edu"])
        sam.goto(f"/courses/{course}")
        sam.locator(f'tr[data-assignment="{assignment["id"]}"]').get_by_role("link").click()
        sam.locator(f'tr[data-problem="{PROBLEM}"]').get_by_role("link").click()
        sam.locator(".cm-content").wait_for()
        submit(sam, CORRECT, "accepted")

        # Student 2 chooses a password from the mail, signs in with tj and submits from it.
        sam.context.clear_cookies()
        _set_password(sam, links["s02@example.edu"])
        config = tmp_path / "tj"
        login = tj(
            config,
            *("login", "--url", server.url, "--email", "s02@example.edu", "--password-stdin"),
            stdin=PASSWORD + "\n",
        )
        assert login.returncode == 0, login.stderr
        (tmp_path / "solution.py").write_text(CORRECT)
        sent = tj(
            config,
            *("submit", PROBLEM, "solution.py", "--assignment", str(assignment["id"])),
            *("--url", server.url),
            cwd=tmp_path,
        )
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "✓ Accepted" in sent.stdout and "attempts 1 used" in sent.stderr

        # Student 3 chooses a password from the mail and submits from a notebook.
        sam.context.clear_cookies()
        _set_password(sam, links["s03@example.edu"])
        token = httpx.post(
            f"{server.url}/api/auth/token",
            json={"email": "s03@example.edu", "password": PASSWORD, "name": "notebook"},
        )
        assert token.status_code == 201, token.text
        cells = [
            "from tensorjudge_client import Judge\n"
            f"judge = Judge({server.url!r}, token={token.json()['secret']!r})",
            "import numpy as np",
            CORRECT.replace("import numpy as np\n", ""),
            f"result = judge.submit({PROBLEM!r}, multi_head_attention, "
            f"assignment={assignment['id']})\nprint(result.verdict)",
        ]
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        NotebookClient(nb, kernel_name="python3", timeout=240).execute()
        errors = [o for c in nb.cells for o in c.outputs if o["output_type"] == "error"]
        assert not errors, json.dumps(errors)[:3000]
        assert "".join(o.get("text", "") for o in nb.cells[3].outputs).split() == ["accepted"]

        # Someone not on the roster joins by the course's link, with no account: the mailed
        # link makes it, joins the course and signs in.
        sam.context.clear_cookies()
        sam.goto(f"/join/{join_code}")
        sam.get_by_role("button", name="I have no account").click()
        sam.locator("#signup-name").fill("Late Joiner")
        sam.locator("#signup-email").fill(LATE)
        sam.locator("#signup-password").fill(PASSWORD)
        sam.locator("#signup-again").fill(PASSWORD)
        sam.get_by_role("button", name="Create my account").click()
        expect(sam.locator("#signup-done")).to_contain_text("Check your mail")
        confirm = lambda: _texts(inbox, "Confirm your TensorJudge address")  # noqa: E731
        _wait(inbox, lambda: LATE in confirm(), "the sign-up's mail")
        [verify] = VERIFY.findall(confirm()[LATE])
        sam.goto(verify)
        sam.get_by_role("button", name="Confirm and sign in").click()
        expect(sam).to_have_url(re.compile(rf"/courses/{course}$"))

        # The due date comes within a day: the 28 with nothing accepted are reminded.
        soon = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
        status, moved = page_api(prof, "PATCH", base, {"due_at": soon})
        assert status == 200, moved
        reminded = lambda: _texts(inbox, "Attention homework is due")  # noqa: E731
        others = sorted([LATE, *(e for e, _ in STUDENTS[3:])])
        _wait(inbox, lambda: len(reminded()) == 28, "28 reminders")
        assert sorted(reminded()) == others

        # The scores are published: every student is told.
        status, published = page_api(prof, "POST", f"{base}/publish", {"scores": True})
        assert status == 200, published
        told = lambda: _texts(inbox, "scores of Attention homework are published")  # noqa: E731
        _wait(inbox, lambda: len(told()) == 31, "31 scores-published mails")
        assert sorted(told()) == sorted([LATE, *(e for e, _ in STUDENTS)])
        # Nobody got a mail twice (the three who submitted got no reminder).
        assert len(inbox.mails) == 1 + 30 + 1 + 28 + 31
    finally:
        for context, _, _ in pages:
            context.close()
    for _, _, errors in pages:
        assert not errors, errors
